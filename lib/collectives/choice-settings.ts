import { ConfigurationError } from '../errors.js';
import { fnv1a64 } from '../protocol/fnv1a.js';
import { readSettings } from '../settings/read-settings.js';
import type { SETTINGS } from '../settings/settings-table.js';
import { CollectiveTopology, UNIFORM_BANDWIDTH_MBPS, UNIFORM_LATENCY_NS } from '../topology/collective-topology.js';
import { groupsText } from '../topology/topology-groups.js';
import type { ChoiceSetting } from '../transport/choice-attribute.js';
import { readAutotuneProfileText } from './autotune-profile.js';
import { type CollectiveTuning, resolveTuning } from './tuning.js';

/**
 * What a rank's choice of algorithms reads beside the facts every rank shares (the world, the
 * plane, the hosts, a probe's gathered links): the variables of the settings table's `algorithm`
 * rows, each as its effective value (the option where given, else the variable, else the
 * default). Ranks whose values differ may choose different algorithms for the same call, so a
 * session publishes those that are not the defaults when it opens, and the coordinator fails
 * every rank alike where two differ (docs/protocol.md 8.3). GX1_SINGLE_COPY and GX1_SHARED_MEMORY
 * are not among them: the cost model's figures do not read them, and ranks may differ there.
 */
type AlgorithmRow = Extract<(typeof SETTINGS)[number], { readonly group: 'algorithm' }>;
type ChoiceVariable = AlgorithmRow extends infer Row ? (Row extends { readonly variables: infer Variables } ? keyof Variables & string : never) : never;

/** What the profile is: `none`, or its file's FNV-1a 64 (ranks may keep the same file at different paths). */
export type ProfileValue = string;

const list = (items: readonly string[]) => (items.length === 0 ? 'none' : items.join(','));

/**
 * The declared links, every directed one (`0-1:MBps:ns`); `none` where there are none, or where
 * rail or aggregate links alone made the uniform links they stand on (tuning.ts), which those
 * settings name.
 */
function linksValue({ topology, railLinks, aggregateLinks }: CollectiveTuning): string {
  if (!(topology instanceof CollectiveTopology)) return topology ?? 'none';
  const uniform =
    topology.links.length === topology.worldSize * (topology.worldSize - 1) &&
    topology.links.every((link) => link.bandwidthMbps === UNIFORM_BANDWIDTH_MBPS && link.latencyNs === UNIFORM_LATENCY_NS);
  if (uniform && railLinks.length + aggregateLinks.length > 0) return 'none';
  return list(topology.links.map((link) => `${link.source}-${link.destination}:${link.bandwidthMbps}:${link.latencyNs}`));
}

/** Each variable's effective value as text; the compiler makes every `algorithm` row's variable have one. */
const VALUE_OF: { readonly [V in ChoiceVariable]: (tuning: CollectiveTuning, profile: ProfileValue) => string } = {
  GX1_COLLECTIVE_ALGORITHM: (tuning) => tuning.algorithm,
  GX1_RING_THRESHOLD_BYTES: (tuning) => String(tuning.ringThresholdBytes),
  GX1_RING_ORDER: (tuning) => tuning.ringOrder?.join(',') ?? 'none',
  GX1_RING_CHANNELS: (tuning) => String(tuning.ringChannels),
  GX1_TOPOLOGY_LINKS: linksValue,
  GX1_TOPOLOGY_GROUPS: ({ groups }) => (groups === null ? 'none' : groups === 'auto' ? 'auto' : groupsText(groups)),
  GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES: (tuning) => String(tuning.groupPayloadBytes),
  GX1_TOPOLOGY_RAIL_LINKS: (tuning) => list(tuning.railLinks.map((link) => `${link.rail}@${link.source}-${link.destination}:${link.bandwidthMbps}:${link.latencyNs}`)),
  GX1_TOPOLOGY_AGGREGATE_LINKS: (tuning) => list(tuning.aggregateLinks.map((link) => `${link.source}-${link.destination}:${link.bandwidthMbps}`)),
  GX1_RAIL_ORDER: ({ railOrder }) => (railOrder === 'auto' ? 'auto' : railOrder.join(',')),
  GX1_COLLECTIVE_AUTOTUNE_PROFILE: (_tuning, profile) => profile,
  GX1_DIRECT_BANDWIDTH_MBPS: (tuning) => String(tuning.directBandwidthMbps),
  GX1_DIRECT_LATENCY_NS: (tuning) => String(tuning.directLatencyNs),
};

/** The variables a rank's choice reads, in the settings table's order. */
export const CHOICE_VARIABLES = Object.keys(VALUE_OF) as readonly ChoiceVariable[];

/**
 * The profile's value: `none` without one, else `fnv1a64:` and its file's hash (16 hex digits),
 * or `unreadable` (the session's open refuses it later, naming why, as it always did).
 */
export function profileValue(tuning: CollectiveTuning): ProfileValue {
  if (tuning.autotuneProfile === null) return 'none';
  try {
    const hash = fnv1a64(new TextEncoder().encode(readAutotuneProfileText(tuning.autotuneProfile.path)));
    return `fnv1a64:${hash.toString(16).padStart(16, '0')}`;
  } catch (error) {
    if (error instanceof ConfigurationError) return 'unreadable';
    throw error;
  }
}

/** Every choice variable's value under `tuning`, in the table's order. */
export function choiceSettings(tuning: CollectiveTuning, profile: ProfileValue): ChoiceSetting[] {
  return CHOICE_VARIABLES.map((variable) => [variable, VALUE_OF[variable](tuning, profile)]);
}

/** Every choice variable's default for a job of `worldSize` ranks and `rails` rails, in the table's order. */
export function choiceDefaults(worldSize: number, rails: number): Map<string, string> {
  return new Map(choiceSettings(resolveTuning({}, worldSize, readSettings({}), rails), 'none'));
}

/** What a rank publishes: its choice settings that are not the defaults (`choiceDefaults`), in the table's order. */
export function publishedChoiceSettings(tuning: CollectiveTuning, profile: ProfileValue, defaults: ReadonlyMap<string, string>): ChoiceSetting[] {
  return choiceSettings(tuning, profile).filter(([variable, value]) => defaults.get(variable) !== value);
}
