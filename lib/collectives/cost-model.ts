import { CollectiveTopology } from '../topology/collective-topology.js';
import { DEFAULT_DIRECT_BANDWIDTH_MBPS, DEFAULT_DIRECT_LATENCY_NS } from '../topology/link-tuning.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import { groupsText } from '../topology/topology-groups.js';
import { hierarchicalAllGather } from './all-gather/hierarchical.js';
import { hierarchicalAllReduce } from './all-reduce/hierarchical.js';
import { ringAllGather } from './all-gather/ring.js';
import { ringAllReduce } from './all-reduce/ring.js';
import { hierarchyOf } from './hierarchical-family.js';
import { hierarchicalReduceScatter } from './reduce-scatter/hierarchical.js';
import { ringReduceScatter } from './reduce-scatter/ring.js';
import type { ScheduleOf } from './schedule/schedule.js';

/**
 * The reference planner's cost model (src/rank/topology.rs): time estimates, in nanoseconds, for
 * the staged path, the flat ring and the hierarchical schedules, from the job's links. It no
 * longer chooses (./choice-cost.ts prices every candidate for that); it scores the groupings
 * GX1_TOPOLOGY_GROUPS=auto weighs (./infer-groups.ts) and gives `plan()` the reference's three
 * figures. A link moves `bytes` in `latencyNs + bytes * 1000 / bandwidthMbps` ns.
 *
 * - direct (staged): the reference's formula, every rank's payload and response through the
 *   coordinator at GX1_DIRECT_BANDWIDTH_MBPS and GX1_DIRECT_LATENCY_NS (32000 MB/s, 1000 ns).
 * - ring and hierarchical: from the schedules that would run, every rank's: the bytes each
 *   directed link carries (pipelined, the busiest link bounds the time), plus the latency of the
 *   slowest link once per dependent step. Links are independent, as in the reference's model,
 *   except that with topology groups a group's links to other groups share one way out (a host's
 *   NIC): the bytes leaving a group take at least their sum over its fastest such link.
 *   A link of several rails carries the sum of its rails' bandwidths (GX1_TOPOLOGY_RAIL_LINKS;
 *   a rail without a link of its own has the link's), capped by its aggregate link.
 *
 * Without a topology every pair of ranks has the reference's uniform link (32000 MB/s, 1000 ns:
 * `CollectiveTopology.uniform`).
 */

/** The collectives the reference plans (and rxccl has hierarchical schedules for). */
export type ModelledCollective = 'allReduce' | 'allGather' | 'reduceScatter';

export const MODELLED_COLLECTIVES: readonly ModelledCollective[] = ['allReduce', 'allGather', 'reduceScatter'];

export interface CostInput {
  readonly worldSize: number;
  /** This rank's tensor in bytes (a reduce-scatter's whole input). */
  readonly bytes: number;
  readonly topology: CollectiveTopology | null;
  readonly groups: TopologyGroups | null;
  readonly ringOrder: readonly number[];
  /** What of the job's tuning the model weighs (CollectiveTuning's fields of these names). */
  readonly tuning: CostTuning;
}

export interface CostTuning {
  readonly ringChannels: number;
  readonly directBandwidthMbps: number;
  readonly directLatencyNs: number;
}

/** The tuning of a job that sets none of it. */
export const DEFAULT_COST_TUNING: CostTuning = { ringChannels: 1, directBandwidthMbps: DEFAULT_DIRECT_BANDWIDTH_MBPS, directLatencyNs: DEFAULT_DIRECT_LATENCY_NS };

/** Estimates in ns; null where the algorithm cannot run (no groups, a link missing). */
export interface CostEstimates {
  readonly direct: number;
  readonly peer: number | null;
  readonly hierarchical: number | null;
}

const SCHEDULES: Record<ModelledCollective, { ring: ScheduleOf; hierarchical: ScheduleOf }> = {
  allReduce: { ring: ringAllReduce, hierarchical: hierarchicalAllReduce },
  allGather: { ring: ringAllGather, hierarchical: hierarchicalAllGather },
  reduceScatter: { ring: ringReduceScatter, hierarchical: hierarchicalReduceScatter },
};

const uniform = new Map<number, CollectiveTopology>();

function uniformTopology(worldSize: number): CollectiveTopology {
  let topology = uniform.get(worldSize);
  if (topology === undefined) uniform.set(worldSize, (topology = CollectiveTopology.uniform(worldSize)));
  return topology;
}

/** The reference's direct estimate: R ranks' payload and response, each way through the coordinator. */
function directEstimate(collective: ModelledCollective, { worldSize, bytes, tuning }: CostInput): number {
  if (worldSize <= 1) return 0;
  const response = collective === 'allGather' ? bytes * worldSize : collective === 'reduceScatter' ? Math.ceil(bytes / worldSize) : bytes;
  return Math.ceil((worldSize * (bytes + response) * 1000) / tuning.directBandwidthMbps) + 2 * worldSize * tuning.directLatencyNs;
}

/** MB/s from `source` to `destination` with the pieces striped over every rail; undefined without a link. */
export function stripedBandwidth(topology: CollectiveTopology, source: number, destination: number): number | undefined {
  const link = topology.link(source, destination);
  if (link === undefined) return undefined;
  let sum = 0;
  for (let rail = 0; rail < topology.rails; rail++) sum += topology.railLink(source, destination, rail)?.bandwidthMbps ?? link.bandwidthMbps;
  return Math.min(sum, topology.aggregateLink(source, destination)?.bandwidthMbps ?? Infinity);
}

/**
 * What a schedule costs per byte of the tensor and per step: the busiest directed link's (or
 * group's way out) ns per byte at the reference size, and the slowest latency among the links
 * used. The schedules' bytes per link grow with the tensor (up to rounding), so one write per
 * shape serves every size; null where a link is missing or the algorithm cannot be written.
 */
interface ScheduleCost {
  readonly nsPerByte: number;
  readonly latencyNs: number;
}

/** The tensor size the costs are taken at: divisible by any world, more elements than any schedule has shares. */
const referenceBytes = (worldSize: number, channels: number) => worldSize * 64 * channels * 1024;

function scheduleCost(write: ScheduleOf, input: CostInput, topology: CollectiveTopology): ScheduleCost | null {
  const { worldSize, groups } = input;
  const bytes = referenceBytes(worldSize, input.tuning.ringChannels);
  const groupOf = new Map(groups?.flatMap((members, group) => members.map((rank) => [rank, group] as const)) ?? []);
  const leaving = new Map<number, { bytes: number; fastestMbps: number }>();
  let busiest = 0;
  let latencyNs = 0;
  for (let rank = 0; rank < worldSize; rank++) {
    let schedule;
    try {
      schedule = write({ rank, worldSize, count: bytes, width: 1, op: 'sum', root: null, ringOrder: input.ringOrder, ringChannels: input.tuning.ringChannels, inPlace: false, ...(groups === null ? {} : { groups }) });
    } catch {
      // More messages on a link than its tags can number: not an algorithm for this job.
      return null;
    }
    const perPeer = new Map<number, number>();
    for (const send of schedule.sends) perPeer.set(send.peer, (perPeer.get(send.peer) ?? 0) + send.span.bytes);
    for (const [peer, sent] of perPeer) {
      const link = topology.link(rank, peer);
      const bandwidth = stripedBandwidth(topology, rank, peer);
      if (link === undefined || bandwidth === undefined) return null;
      busiest = Math.max(busiest, (sent * 1000) / bandwidth);
      latencyNs = Math.max(latencyNs, link.latencyNs);
      const group = groupOf.get(rank);
      if (group !== undefined && group !== groupOf.get(peer)) {
        const out = leaving.get(group) ?? { bytes: 0, fastestMbps: 0 };
        leaving.set(group, { bytes: out.bytes + sent, fastestMbps: Math.max(out.fastestMbps, bandwidth) });
      }
    }
  }
  for (const out of leaving.values()) busiest = Math.max(busiest, (out.bytes * 1000) / out.fastestMbps);
  return { nsPerByte: busiest / bytes, latencyNs };
}

/** Dependent steps (each waits on a message of the one before): the ring's W-1 per pass, the hierarchy's hops. */
function dependentSteps(collective: ModelledCollective, algorithm: 'ring' | 'hierarchical', input: CostInput): number {
  const { worldSize } = input;
  if (algorithm === 'ring') return collective === 'allReduce' ? 2 * (worldSize - 1) : worldSize - 1;
  const { runs, groups } = hierarchyOf(input);
  if (collective === 'allGather') return 2;
  const reduce = 1 + (runs.length - 1);
  return collective === 'allReduce' ? reduce + (groups.length - 1) + 1 : reduce + 1;
}

/** The costs of the ring's and the hierarchy's schedules, per topology and shape (not per size). */
const remembered = new WeakMap<CollectiveTopology, Map<string, { ring: ScheduleCost | null; hierarchical: ScheduleCost | null }>>();

function costsOf(collective: ModelledCollective, input: CostInput, topology: CollectiveTopology) {
  const key = `${collective} ${input.groups === null ? '-' : groupsText(input.groups)} ${input.ringOrder.join(',')} ${input.tuning.ringChannels}`;
  let known = remembered.get(topology);
  if (known === undefined) remembered.set(topology, (known = new Map()));
  let costs = known.get(key);
  if (costs === undefined) {
    const { ring, hierarchical } = SCHEDULES[collective];
    costs = { ring: scheduleCost(ring, input, topology), hierarchical: input.groups === null ? null : scheduleCost(hierarchical, input, topology) };
    known.set(key, costs);
  }
  return costs;
}

/** The three estimates of one collective of `input.bytes` (`session.plan` reports them). */
export function estimateCollective(collective: ModelledCollective, input: CostInput): CostEstimates {
  const topology = input.topology ?? uniformTopology(input.worldSize);
  const costs = costsOf(collective, input, topology);
  const time = (cost: ScheduleCost | null, algorithm: 'ring' | 'hierarchical') =>
    cost === null ? null : Math.ceil(cost.nsPerByte * input.bytes + dependentSteps(collective, algorithm, input) * cost.latencyNs);
  return {
    direct: directEstimate(collective, input),
    peer: input.worldSize <= 1 ? 0 : time(costs.ring, 'ring'),
    hierarchical: time(costs.hierarchical, 'hierarchical'),
  };
}
