import { CollectiveTopology } from '../topology/collective-topology.js';
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
 * The planner's cost model, as the reference's (src/rank/topology.rs): time estimates, in
 * nanoseconds, for the staged path, the flat ring and the hierarchical schedules, from the job's
 * links. A link moves `bytes` in `latencyNs + bytes * 1000 / bandwidthMbps` ns.
 *
 * - direct (staged): the reference's formula, every rank's payload and response through the
 *   coordinator at its direct bandwidth and latency (32000 MB/s, 1000 ns: the reference's defaults).
 * - ring and hierarchical: from the schedules that would run, every rank's: the bytes each
 *   directed link carries (pipelined, the busiest link bounds the time), plus the latency of the
 *   slowest link once per dependent step. Links are counted as independent, as the reference's
 *   model does; where ranks share one NIC the hierarchy's advantage is smaller than estimated.
 *
 * Without a topology every pair of ranks has the reference's uniform link (32000 MB/s, 1000 ns).
 */

/** The collectives the reference plans (and rxccl has hierarchical schedules for). */
export type ModelledCollective = 'allReduce' | 'allGather' | 'reduceScatter';

export const MODELLED_COLLECTIVES: readonly ModelledCollective[] = ['allReduce', 'allGather', 'reduceScatter'];

/** The reference's uniform link and direct transport. */
export const DEFAULT_BANDWIDTH_MBPS = 32_000;
export const DEFAULT_LATENCY_NS = 1_000;

export interface CostInput {
  readonly worldSize: number;
  /** This rank's tensor in bytes (a reduce-scatter's whole input). */
  readonly bytes: number;
  readonly topology: CollectiveTopology | null;
  readonly groups: TopologyGroups | null;
  readonly ringOrder: readonly number[];
  readonly ringChannels: number;
}

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

/** Estimates kept per topology: a job plans few shapes, and writing every rank's schedule is not free. */
const remembered = new WeakMap<CollectiveTopology, Map<string, CostEstimates>>();
const uniform = new Map<number, CollectiveTopology>();

function uniformTopology(worldSize: number): CollectiveTopology {
  let topology = uniform.get(worldSize);
  if (topology === undefined) {
    const ranks = Array.from({ length: worldSize }, (_, rank) => rank);
    const links = ranks.flatMap((source) =>
      ranks.filter((destination) => destination !== source).map((destination) => ({ source, destination, bandwidthMbps: DEFAULT_BANDWIDTH_MBPS, latencyNs: DEFAULT_LATENCY_NS })),
    );
    topology = new CollectiveTopology({ worldSize, links });
    uniform.set(worldSize, topology);
  }
  return topology;
}

/** The reference's direct estimate: R ranks' payload and response, each way through the coordinator. */
function directEstimate(collective: ModelledCollective, worldSize: number, bytes: number): number {
  if (worldSize <= 1) return 0;
  const response = collective === 'allGather' ? bytes * worldSize : collective === 'reduceScatter' ? Math.ceil(bytes / worldSize) : bytes;
  return Math.ceil((worldSize * (bytes + response) * 1000) / DEFAULT_BANDWIDTH_MBPS) + 2 * worldSize * DEFAULT_LATENCY_NS;
}

/**
 * The time of `write`'s schedules on `topology`: the busiest directed link's bytes over its
 * bandwidth, plus `steps` times the slowest latency among the links used; null if a link is missing.
 */
function scheduleEstimate(write: ScheduleOf, input: CostInput, topology: CollectiveTopology, steps: number): number | null {
  const { worldSize, bytes } = input;
  let busiest = 0;
  let slowestLatency = 0;
  for (let rank = 0; rank < worldSize; rank++) {
    const schedule = write({ rank, worldSize, count: bytes, width: 1, op: 'sum', root: null, ringOrder: input.ringOrder, ringChannels: input.ringChannels, inPlace: false, ...(input.groups === null ? {} : { groups: input.groups }) });
    const perPeer = new Map<number, number>();
    for (const send of schedule.sends) perPeer.set(send.peer, (perPeer.get(send.peer) ?? 0) + send.span.bytes);
    for (const [peer, sent] of perPeer) {
      const link = topology.link(rank, peer);
      if (link === undefined) return null;
      busiest = Math.max(busiest, (sent * 1000) / link.bandwidthMbps);
      slowestLatency = Math.max(slowestLatency, link.latencyNs);
    }
  }
  return Math.ceil(busiest + steps * slowestLatency);
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

/** The three estimates of one collective of `input.bytes` (`session.plan` reports them). */
export function estimateCollective(collective: ModelledCollective, input: CostInput): CostEstimates {
  const topology = input.topology ?? uniformTopology(input.worldSize);
  const key = `${collective} ${input.bytes} ${input.groups === null ? '-' : groupsText(input.groups)} ${input.ringOrder.join(',')} ${input.ringChannels}`;
  let known = remembered.get(topology);
  if (known === undefined) remembered.set(topology, (known = new Map()));
  const cached = known.get(key);
  if (cached !== undefined) return cached;
  const { ring, hierarchical } = SCHEDULES[collective];
  const estimates: CostEstimates = {
    direct: directEstimate(collective, input.worldSize, input.bytes),
    peer: input.worldSize <= 1 ? 0 : scheduleEstimate(ring, input, topology, dependentSteps(collective, 'ring', input)),
    hierarchical: input.groups === null ? null : scheduleEstimate(hierarchical, input, topology, dependentSteps(collective, 'hierarchical', input)),
  };
  known.set(key, estimates);
  return estimates;
}

/** Whether the hierarchy is expected to beat the flat ring (ties go to the ring, as the reference's). */
export function hierarchyBeatsRing(collective: ModelledCollective, input: CostInput): boolean {
  const { peer, hierarchical } = estimateCollective(collective, input);
  return hierarchical !== null && (peer === null || hierarchical < peer);
}
