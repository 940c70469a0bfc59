import { ConfigurationError, readSetting } from '../errors.js';
import { CollectiveTopology, type TopologyAggregateLink, type TopologyRailLink } from '../topology/collective-topology.js';
import { parsePositive } from '../topology/environment-values.js';
import { type Environment, type Setting, type Settings, settingsOf } from '../settings/read-settings.js';
import {
  parseAggregateLinks,
  parseRailLinks,
  parseRailOrder,
  validateRailOrder,
} from '../topology/link-tuning.js';
import type { CostTuning } from './cost-model.js';
import { inferTopologyGroups } from './infer-groups.js';
import {
  type AlgorithmPolicy,
  parseAlgorithmPolicy,
  parseByteCount,
  parseRingOrder,
  parseTopologyLinks,
  validateRingChannels,
  validateRingOrder,
} from '../topology/ring-tuning.js';
import {
  DEFAULT_GROUP_PAYLOAD_BYTES,
  parseTopologyGroups,
  type TopologyGroups,
  type TopologyGroupsSetting,
  validateTopologyGroups,
} from '../topology/topology-groups.js';

/** The reference's default (there `auto` sends data rank to rank from it; here the tree policy's all-reduce turns to Rabenseifner's). */
export const DEFAULT_RING_THRESHOLD_BYTES = 256 * 1024;

/**
 * How a job chooses and shapes its collective algorithms: the seed crate's tuning surface
 * (src/rank/topology.rs), same variable names, same validation messages. Session options mirror
 * the variables; an option given wins over its variable.
 */
export interface TuningOptions {
  /** `GX1_COLLECTIVE_ALGORITHM`: auto (default), direct (through the coordinator), ring, hierarchical (needs topology groups), tree (log-depth). */
  readonly algorithm?: AlgorithmPolicy | string;
  /** `GX1_RING_THRESHOLD_BYTES`: under `tree`, the all-reduce from this size is Rabenseifner's, below it recursive doubling (default 256 KiB); `auto` weighs every size by its cost model. */
  readonly ringThresholdBytes?: number;
  /** `GX1_RING_ORDER`: the ring, every rank once ("0,2,1,3"); default the topology's best ring order. */
  readonly ringOrder?: readonly number[] | string;
  /** `GX1_RING_CHANNELS`: parts a ring algorithm stripes its tensor over, 1..64 (default 1). */
  readonly ringChannels?: number;
  /** `GX1_TOPOLOGY_LINKS`: `probe` (measure at open, tcp_peer) or links "0-1:MBps:ns,..." the ring order is chosen from. */
  readonly topologyLinks?: string;
  /**
   * `GX1_TOPOLOGY_GROUPS`: ranks sharing fast links, every rank once ([[0, 1], [2, 3]] or "0,1;2,3"),
   * which hierarchical collectives follow; `auto`: inferred from the topology when the session opens.
   */
  readonly topologyGroups?: readonly (readonly number[])[] | string;
  /** `GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES`: the payload automatic grouping scores candidates at (default 16 MiB). */
  readonly groupPayloadBytes?: number;
  /** `GX1_TOPOLOGY_RAIL_LINKS`: links of one rail, "RAIL@A-B:MBps:ns,..." (added to the topology; needs that many rails). */
  readonly topologyRailLinks?: string;
  /** `GX1_TOPOLOGY_AGGREGATE_LINKS`: a pair's bandwidth with every rail at once, "A-B:MBps,...". */
  readonly topologyAggregateLinks?: string;
  /** `GX1_RAIL_ORDER`: the rails channels and pieces take, in order ("1,0"), or `auto` (default): the best rails first. */
  readonly railOrder?: readonly number[] | string;
  /** `GX1_DIRECT_BANDWIDTH_MBPS`: the staged path's bandwidth for the planner (default 32000). */
  readonly directBandwidthMbps?: number;
  /** `GX1_DIRECT_LATENCY_NS`: the staged path's latency for the planner (default 1000). */
  readonly directLatencyNs?: number;
  /** `GX1_COLLECTIVE_AUTOTUNE_PROFILE`: a profile `rxccl tune` wrote for this job's topology; `auto` takes its measured choices. */
  readonly autotuneProfile?: string;
}

export interface CollectiveTuning {
  readonly algorithm: AlgorithmPolicy;
  readonly ringThresholdBytes: number;
  /** The explicit ring order, or null: the topology's best order decides. */
  readonly ringOrder: readonly number[] | null;
  readonly ringChannels: number;
  /** Links to choose the ring from; `probe`: measure them when the session opens; null: uniform. */
  readonly topology: CollectiveTopology | 'probe' | null;
  /** The topology groups; `auto`: inferred when the session opens; null: none (no hierarchy). */
  readonly groups: TopologyGroupsSetting | null;
  /** The payload automatic grouping scores its candidates at. */
  readonly groupPayloadBytes: number;
  /** Rail and aggregate links declared beside the links (in `topology` already; added to a probed one). */
  readonly railLinks: readonly TopologyRailLink[];
  readonly aggregateLinks: readonly TopologyAggregateLink[];
  /** The rail order; `auto`: the topology's best rails first (`preferredRailOrder`). */
  readonly railOrder: readonly number[] | 'auto';
  /** The staged path's figures, for the planner. */
  readonly directBandwidthMbps: number;
  readonly directLatencyNs: number;
  /** The autotune profile's path and the setting that named it, read and checked when the session opens; null: none. */
  readonly autotuneProfile: { readonly path: string; readonly setting: string } | null;
}

/** `hierarchical` needs groups, given or `auto` (the reference's check, and its text). */
function checkHierarchyHasGroups(algorithm: AlgorithmPolicy, groups: TopologyGroupsSetting | null): void {
  if (algorithm === 'hierarchical' && groups === null) {
    throw new ConfigurationError('invalid collective hierarchy: GX1_COLLECTIVE_ALGORITHM=hierarchical requires explicit or inferred topology groups');
  }
}

/**
 * The option where given, else its variable's text where set (a variable whose check needs the
 * world size or the rails, parsed here): the value, and the name its refusals carry.
 */
function given<T>(option: T | undefined, optionName: string, variable: Setting<string | undefined>): { readonly value: T | string; readonly name: string } | undefined {
  if (option !== undefined) return { value: option, name: optionName };
  return variable.text === undefined ? undefined : { value: variable.text, name: variable.variable };
}

/** A number the option gives, read by `parse` as the reference reads the variable (naming the option), else the variable's value. */
function numberSetting(option: number | undefined, optionName: string, parse: (name: string, text: string) => number, variable: Setting<number>): number {
  return option !== undefined ? parse(optionName, String(option)) : variable.value;
}

/**
 * Resolves the tuning of one rank of a job with `rails` point-to-point rails from its options, else
 * its settings (`env`: settings, or an environment read into them). Every refusal names the option
 * or variable it read (`readSetting`), also where the check is shared (`topology rank 2 is outside
 * world size 2`).
 */
export function resolveTuning(options: TuningOptions, worldSize: number, env: Settings | Environment, rails = 1): CollectiveTuning {
  const settings = settingsOf(env);
  const algorithm = options.algorithm !== undefined ? parseAlgorithmPolicy(String(options.algorithm), 'algorithm') : settings.GX1_COLLECTIVE_ALGORITHM.value;
  const ringThresholdBytes =
    options.ringThresholdBytes !== undefined
      ? parseByteCount('ringThresholdBytes', String(options.ringThresholdBytes))
      : (settings.GX1_RING_THRESHOLD_BYTES.value ?? DEFAULT_RING_THRESHOLD_BYTES);
  const order = given(options.ringOrder, 'ringOrder', settings.GX1_RING_ORDER);
  const ringOrder =
    order === undefined ? null : readSetting(order.name, () => (typeof order.value === 'string' ? parseRingOrder(worldSize, order.value) : validateRingOrder(worldSize, order.value)));
  const ringChannels =
    options.ringChannels !== undefined ? readSetting('ringChannels', () => validateRingChannels(options.ringChannels!)) : settings.GX1_RING_CHANNELS.value;
  const links = given(options.topologyLinks, 'topologyLinks', settings.GX1_TOPOLOGY_LINKS);
  const declared =
    links === undefined ? null : links.value.trim().toLowerCase() === 'probe' ? 'probe' : readSetting(links.name, () => parseTopologyLinks(worldSize, links.value));
  const railLinksGiven = given(options.topologyRailLinks, 'topologyRailLinks', settings.GX1_TOPOLOGY_RAIL_LINKS);
  const railLinks = railLinksGiven === undefined ? [] : readSetting(railLinksGiven.name, () => parseRailLinks(worldSize, rails, railLinksGiven.value));
  const aggregateLinksGiven = given(options.topologyAggregateLinks, 'topologyAggregateLinks', settings.GX1_TOPOLOGY_AGGREGATE_LINKS);
  const aggregateLinks = aggregateLinksGiven === undefined ? [] : readSetting(aggregateLinksGiven.name, () => parseAggregateLinks(worldSize, aggregateLinksGiven.value));
  // Rail or aggregate links alone go on the reference's uniform links, as there.
  const base = declared === null && (railLinks.length > 0 || aggregateLinks.length > 0) ? CollectiveTopology.uniform(worldSize) : declared;
  const topology = base instanceof CollectiveTopology ? base.withRailLinks(rails, railLinks, aggregateLinks) : base;
  const railOrderGiven = given(options.railOrder, 'railOrder', settings.GX1_RAIL_ORDER);
  const railOrder =
    railOrderGiven === undefined
      ? 'auto'
      : readSetting(railOrderGiven.name, () => (typeof railOrderGiven.value === 'string' ? parseRailOrder(rails, railOrderGiven.value) : validateRailOrder(rails, railOrderGiven.value)));
  const directBandwidthMbps = numberSetting(options.directBandwidthMbps, 'directBandwidthMbps', parsePositive, settings.GX1_DIRECT_BANDWIDTH_MBPS);
  const directLatencyNs = numberSetting(options.directLatencyNs, 'directLatencyNs', parseByteCount, settings.GX1_DIRECT_LATENCY_NS);
  const groupsGiven = given(options.topologyGroups, 'topologyGroups', settings.GX1_TOPOLOGY_GROUPS);
  const groups =
    groupsGiven === undefined
      ? null
      : readSetting(groupsGiven.name, () =>
          typeof groupsGiven.value === 'string' ? parseTopologyGroups(worldSize, groupsGiven.value, groupsGiven.name) : validateTopologyGroups(worldSize, groupsGiven.value),
        );
  checkHierarchyHasGroups(algorithm, groups);
  // Read only where groups are inferred, as the reference does.
  const groupPayloadBytes =
    groups !== 'auto'
      ? DEFAULT_GROUP_PAYLOAD_BYTES
      : numberSetting(options.groupPayloadBytes, 'groupPayloadBytes', parsePositive, settings.GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES);
  // Inferred now from declared links; from the hosts or probed links when the session opens.
  const inferred =
    groups === 'auto' && topology instanceof CollectiveTopology
      ? readSetting(groupsGiven!.name, () => autoGroups(topology, groupPayloadBytes, { ringChannels, directBandwidthMbps, directLatencyNs }))
      : groups;
  const profile = given(options.autotuneProfile, 'autotuneProfile', settings.GX1_COLLECTIVE_AUTOTUNE_PROFILE);
  return {
    algorithm,
    ringThresholdBytes,
    ringOrder,
    ringChannels,
    topology,
    groups: inferred,
    groupPayloadBytes,
    railLinks,
    aggregateLinks,
    railOrder,
    directBandwidthMbps,
    directLatencyNs,
    autotuneProfile: profile === undefined ? null : { path: profile.value, setting: profile.name },
  };
}

/** GX1_TOPOLOGY_GROUPS=auto over `topology` (`inferTopologyGroups`); without links there is nothing to infer from. */
export function autoGroups(topology: CollectiveTopology | null, payloadBytes: number, tuning: CostTuning): TopologyGroups {
  if (topology === null) {
    throw new ConfigurationError(
      'invalid collective hierarchy: automatic grouping found no distinct fast-link domains ' +
        '(GX1_TOPOLOGY_GROUPS=auto groups ranks by the host they advertise on tcp_peer, else by the links of GX1_TOPOLOGY_LINKS: declare them, or set it to probe)',
    );
  }
  return inferTopologyGroups(topology, payloadBytes, tuning);
}
