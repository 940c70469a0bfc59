import { ConfigurationError } from '../errors.js';
import type { Algorithm, CollectiveName, Collectives } from './algorithm.js';
import { allPairsAllReduce } from './all-reduce/all-pairs.js';
import { pairwiseAllReduce } from './all-reduce/pairwise.js';
import { ringAllReduce } from './all-reduce/ring.js';
import { stagedAllReduce } from './all-reduce/staged.js';
import { pairwiseAllGather } from './all-gather/pairwise.js';
import { ringAllGather } from './all-gather/ring.js';
import { stagedAllGather } from './all-gather/staged.js';
import { pairwiseAllToAll } from './all-to-all/pairwise.js';
import { stagedAllToAll } from './all-to-all/staged.js';
import { stagedAllToAllV } from './all-to-all-v/staged.js';
import { pairwiseBarrier } from './barrier/pairwise.js';
import { stagedBarrier } from './barrier/staged.js';
import { chainBroadcast } from './broadcast/chain.js';
import { pairwiseBroadcast } from './broadcast/pairwise.js';
import { stagedBroadcast } from './broadcast/staged.js';
import { pairwiseGather } from './gather/pairwise.js';
import { stagedGather } from './gather/staged.js';
import { pairwiseReduce } from './reduce/pairwise.js';
import { stagedReduce } from './reduce/staged.js';
import { pairwiseReduceScatter } from './reduce-scatter/pairwise.js';
import { ringReduceScatter } from './reduce-scatter/ring.js';
import { stagedReduceScatter } from './reduce-scatter/staged.js';
import { stagedScatter } from './scatter/staged.js';
import { recursiveDoublingAllReduce } from './all-reduce/recursive-doubling.js';
import { rabenseifnerAllReduce } from './all-reduce/rabenseifner.js';
import { bruckAllGather } from './all-gather/bruck.js';
import { binomialGather } from './gather/binomial.js';
import { disseminationBarrier } from './barrier/dissemination.js';
import { binomialBroadcast } from './broadcast/binomial.js';
import { binomialReduce } from './reduce/binomial.js';
import { hierarchicalAllReduce } from './all-reduce/hierarchical.js';
import { hierarchicalAllGather } from './all-gather/hierarchical.js';
import { hierarchicalReduceScatter } from './reduce-scatter/hierarchical.js';
import { type AutotuneEntry, type AutotuneProfile, profileEntry } from './autotune-profile.js';
import { shapeCostOf } from './candidate-costs.js';
import { estimateOf } from './choice-cost.js';
import type { ScheduleOf } from './schedule/schedule.js';
import type { CollectiveTopology } from '../topology/collective-topology.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import type { CollectiveTuning } from './tuning.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';

/**
 * Where an algorithm runs: the native data plane (the addon's thread over data links of its own),
 * the JS plane (the event loop over the links: the peer mesh, or on tcp_host_staged the
 * coordinator's rails), or the coordinator itself (the staged path: every byte through it). A
 * session has one plane for its scheduled collectives (`sessionPlane`); the coordinator serves
 * every session.
 */
export type Plane = 'native' | 'js' | 'coordinator';

/**
 * Families, as GX1_COLLECTIVE_ALGORITHM names them: `direct` asks for the staged path, `ring` for
 * the ring family (rings, the chain). `pairwise` moves data between every pair of ranks at once
 * (all-pairs included); `hierarchical` follows the topology groups (GX1_TOPOLOGY_GROUPS);
 * `tree` takes about log2 W dependent steps, one peer per step (recursive doubling, Rabenseifner's,
 * binomial trees, Bruck's, dissemination).
 */
export type AlgorithmFamily = 'staged' | 'ring' | 'pairwise' | 'hierarchical' | 'tree';

/** A bound of a row's size range: bytes, or the job's GX1_RING_THRESHOLD_BYTES. */
export type SizeBound = number | 'ring threshold';

/**
 * One row of the algorithm table, as data: an algorithm on one plane, where it can run at all
 * (`fits`), the sizes a policy that asks for its family takes it at (this rank's tensor in bytes,
 * `from` inclusive, `below` exclusive: `auto` weighs every size), and either the schedule it runs
 * (scheduled rows, run by lib/collectives/run-scheduled.ts on their plane, and priced from it by
 * ./candidate-costs.ts) or its own `run` (the staged rows).
 */
export type AlgorithmRow<N extends CollectiveName> = {
  readonly name: string;
  readonly plane: Plane;
  readonly family: AlgorithmFamily;
  readonly from?: SizeBound;
  readonly below?: SizeBound;
  readonly fits?: (situation: Situation) => boolean;
  /**
   * Its schedules are one rank's turned round the ring: rank r's is rank 0's with every peer moved
   * on by r (on the identity ring order). The model then reckons rank 0 alone where every link
   * costs the same (./candidate-costs.ts); spec/collectives/shape-cost-reckoning.spec.ts checks it.
   */
  readonly rotated?: true;
} & ({ readonly schedule: ScheduleOf; readonly run?: undefined } | { readonly run: Algorithm<Collectives[N][0], Collectives[N][1]>; readonly schedule?: undefined });

type AlgorithmTable = { readonly [N in CollectiveName]: readonly AlgorithmRow<N>[] };

/** What the choice depends on. */
export interface Situation {
  readonly transport: CollectiveTransport;
  /** The session's plane for scheduled collectives (`sessionPlane`). */
  readonly plane: Plane;
  readonly worldSize: number;
  /** This rank's tensor in bytes (every rank passes the same size where the choice matters). */
  readonly bytes: number;
  readonly tuning: CollectiveTuning;
  /** Every rank of the job advertises this rank's host (tcp_peer; the same answer on every rank). */
  readonly ranksShareHost: boolean;
  /** The topology groups (given, or inferred when the session opened), else null. */
  readonly groups: TopologyGroups | null;
  /** The groups are the hosts the ranks advertise (the same on every rank): weighed without links. */
  readonly groupsAreHosts?: boolean;
  /** The links, declared or probed, the cost model weighs (lib/collectives/cost-model.ts), else null. */
  readonly topology: CollectiveTopology | null;
  /** The ring order of ring-family algorithms. */
  readonly ringOrder: readonly number[];
  /** The autotune profile (GX1_COLLECTIVE_AUTOTUNE_PROFILE), else null. */
  readonly profile: AutotuneProfile | null;
}

/** The plane a session runs its scheduled collectives on. */
export function sessionPlane(transport: CollectiveTransport, nativePlane: boolean): Plane {
  if (transport !== 'tcp_peer') return 'coordinator';
  return nativePlane ? 'native' : 'js';
}

/**
 * Smallest world the JS plane's pairwise rows and the native plane's chain serve: at 2 ranks they
 * would be the ring and the pairwise broadcast, message for message.
 */
export const PAIRWISE_MIN_WORLD_SIZE = 3;

const atLeastThreeRanks = ({ worldSize }: Situation) => worldSize >= PAIRWISE_MIN_WORLD_SIZE;

/** The hierarchical rows follow the topology groups: without them there is no hierarchy. */
const hasGroups = ({ groups }: Situation) => groups !== null;

/**
 * Every collective's algorithms per plane; the staged row, which every collective has, comes last.
 * Under `auto` the cheapest row of the session's plane that fits runs (`cheapestRow`), ties going
 * to the row listed first. Adding an algorithm is a schedule file under
 * lib/collectives/<collective>/ and a row here per plane it serves (docs/architecture.md).
 */
export const ALGORITHMS: AlgorithmTable = {
  barrier: [
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseBarrier },
    { name: 'dissemination', plane: 'native', family: 'tree', schedule: disseminationBarrier, rotated: true },
    { name: 'dissemination', plane: 'js', family: 'tree', schedule: disseminationBarrier, rotated: true },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedBarrier },
  ],
  allReduce: [
    { name: 'all-pairs', plane: 'native', family: 'pairwise', schedule: allPairsAllReduce, rotated: true },
    { name: 'hierarchical', plane: 'native', family: 'hierarchical', fits: hasGroups, schedule: hierarchicalAllReduce },
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseAllReduce, rotated: true },
    { name: 'ring', plane: 'native', family: 'ring', schedule: ringAllReduce, rotated: true },
    { name: 'recursive-doubling', plane: 'native', family: 'tree', below: 'ring threshold', schedule: recursiveDoublingAllReduce },
    { name: 'rabenseifner', plane: 'native', family: 'tree', from: 'ring threshold', schedule: rabenseifnerAllReduce },
    { name: 'hierarchical', plane: 'js', family: 'hierarchical', fits: hasGroups, schedule: hierarchicalAllReduce },
    { name: 'pairwise', plane: 'js', family: 'pairwise', fits: atLeastThreeRanks, schedule: pairwiseAllReduce, rotated: true },
    { name: 'ring', plane: 'js', family: 'ring', schedule: ringAllReduce, rotated: true },
    { name: 'recursive-doubling', plane: 'js', family: 'tree', below: 'ring threshold', schedule: recursiveDoublingAllReduce },
    { name: 'rabenseifner', plane: 'js', family: 'tree', from: 'ring threshold', schedule: rabenseifnerAllReduce },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedAllReduce },
  ],
  reduce: [
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseReduce },
    { name: 'binomial', plane: 'native', family: 'tree', schedule: binomialReduce },
    { name: 'pairwise', plane: 'js', family: 'pairwise', schedule: pairwiseReduce },
    { name: 'binomial', plane: 'js', family: 'tree', schedule: binomialReduce },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedReduce },
  ],
  broadcast: [
    { name: 'chain', plane: 'native', family: 'ring', fits: atLeastThreeRanks, schedule: chainBroadcast },
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseBroadcast },
    { name: 'binomial', plane: 'native', family: 'tree', schedule: binomialBroadcast },
    { name: 'pairwise', plane: 'js', family: 'pairwise', fits: atLeastThreeRanks, schedule: pairwiseBroadcast },
    { name: 'chain', plane: 'js', family: 'ring', schedule: chainBroadcast },
    { name: 'binomial', plane: 'js', family: 'tree', schedule: binomialBroadcast },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedBroadcast },
  ],
  allGather: [
    { name: 'hierarchical', plane: 'native', family: 'hierarchical', fits: hasGroups, schedule: hierarchicalAllGather },
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseAllGather, rotated: true },
    { name: 'ring', plane: 'native', family: 'ring', schedule: ringAllGather, rotated: true },
    { name: 'bruck', plane: 'native', family: 'tree', schedule: bruckAllGather },
    { name: 'hierarchical', plane: 'js', family: 'hierarchical', fits: hasGroups, schedule: hierarchicalAllGather },
    { name: 'pairwise', plane: 'js', family: 'pairwise', fits: atLeastThreeRanks, schedule: pairwiseAllGather, rotated: true },
    { name: 'ring', plane: 'js', family: 'ring', schedule: ringAllGather, rotated: true },
    { name: 'bruck', plane: 'js', family: 'tree', schedule: bruckAllGather },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedAllGather },
  ],
  gather: [
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseGather },
    { name: 'binomial', plane: 'native', family: 'tree', schedule: binomialGather },
    { name: 'pairwise', plane: 'js', family: 'pairwise', schedule: pairwiseGather },
    { name: 'binomial', plane: 'js', family: 'tree', schedule: binomialGather },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedGather },
  ],
  scatter: [{ name: 'staged', plane: 'coordinator', family: 'staged', run: stagedScatter }],
  reduceScatter: [
    { name: 'hierarchical', plane: 'native', family: 'hierarchical', fits: hasGroups, schedule: hierarchicalReduceScatter },
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseReduceScatter, rotated: true },
    { name: 'ring', plane: 'native', family: 'ring', schedule: ringReduceScatter, rotated: true },
    { name: 'hierarchical', plane: 'js', family: 'hierarchical', fits: hasGroups, schedule: hierarchicalReduceScatter },
    { name: 'pairwise', plane: 'js', family: 'pairwise', fits: atLeastThreeRanks, schedule: pairwiseReduceScatter, rotated: true },
    { name: 'ring', plane: 'js', family: 'ring', schedule: ringReduceScatter, rotated: true },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedReduceScatter },
  ],
  allToAll: [
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseAllToAll, rotated: true },
    { name: 'pairwise', plane: 'js', family: 'pairwise', schedule: pairwiseAllToAll, rotated: true },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedAllToAll },
  ],
  allToAllV: [{ name: 'staged', plane: 'coordinator', family: 'staged', run: stagedAllToAllV }],
};

function bound(value: SizeBound, tuning: CollectiveTuning): number {
  return value === 'ring threshold' ? tuning.ringThresholdBytes : value;
}

/** Whether this size lies in `row`'s range (a policy's pick among its family's rows). */
function servesSize(row: AlgorithmRow<CollectiveName>, { bytes, tuning }: Situation): boolean {
  if (row.from !== undefined && bytes < bound(row.from, tuning)) return false;
  return row.below === undefined || bytes < bound(row.below, tuning);
}

/** One candidate of a call under `auto`: a row of the session's plane that fits, and the model's estimate (ns). */
export interface CandidateEstimate<N extends CollectiveName = CollectiveName> {
  readonly row: AlgorithmRow<N>;
  readonly estimatedTimeNs: number | null;
}

/**
 * Every row `auto` weighs for this call, in table order: the rows of the session's plane that
 * fit, each with the cost model's estimate (./candidate-costs.ts); on the coordinator's plane,
 * or for a collective without peer rows, none.
 */
export function candidateEstimates<N extends CollectiveName>(collective: N, situation: Situation, table: AlgorithmTable = ALGORITHMS): CandidateEstimate<N>[] {
  const rows = table[collective] as readonly AlgorithmRow<N>[];
  const { plane, bytes } = situation;
  if (plane === 'coordinator' || situation.worldSize === 1) return [];
  const candidates: CandidateEstimate<N>[] = [];
  rows.forEach((row, index) => {
    if (row.plane !== plane || !(row.fits?.(situation) ?? true)) return;
    const cost = shapeCostOf(collective, rows, index, plane, situation);
    candidates.push({ row, estimatedTimeNs: cost === null ? null : estimateOf(cost, bytes) });
  });
  return candidates;
}

/**
 * The candidate with the least estimate, ties to the row listed first (a row the model cannot
 * price loses to any it can); undefined without candidates. The estimates depend only on facts
 * every rank shares, so every rank takes the same row.
 */
export function cheapestRow<N extends CollectiveName>(candidates: readonly CandidateEstimate<N>[]): AlgorithmRow<N> | undefined {
  let best: CandidateEstimate<N> | undefined;
  for (const candidate of candidates) {
    if (best === undefined || (candidate.estimatedTimeNs !== null && (best.estimatedTimeNs === null || candidate.estimatedTimeNs < best.estimatedTimeNs))) best = candidate;
  }
  return best?.row;
}

/**
 * Chooses the algorithm for one call:
 * - one rank, or `direct`: the staged row (through the coordinator);
 * - `ring` (`hierarchical`, `tree`): the collective's ring-family (hierarchical, tree) row on the session's
 *   plane (on tcp_host_staged, the JS plane's, its pieces travelling the coordinator's
 *   point-to-point rails): the first whose sizes (`from`, `below`) take this one, else the first
 *   (a tree all-reduce: recursive doubling under the ring threshold, Rabenseifner's from it); a
 *   collective without one as `auto`;
 * - `auto`: the row the autotune profile measured best for this size, where it has one on the
 *   session's plane (`profiledRow`); else the cheapest candidate by the cost model
 *   (`candidateEstimates`, `cheapestRow`); else staged.
 */
export function selectAlgorithm<N extends CollectiveName>(collective: N, situation: Situation, table: AlgorithmTable = ALGORITHMS): AlgorithmRow<N> {
  const rows = table[collective] as readonly AlgorithmRow<N>[];
  const staged = rows.find((row) => row.plane === 'coordinator');
  if (staged === undefined) throw new ConfigurationError(`no staged algorithm for ${collective}`);
  const { tuning, worldSize, plane } = situation;
  if (worldSize === 1 || tuning.algorithm === 'direct') return staged;
  if (tuning.algorithm === 'ring' || tuning.algorithm === 'hierarchical' || tuning.algorithm === 'tree') {
    const peerPlane = plane === 'coordinator' ? 'js' : plane;
    const family = rows.filter((row) => row.family === tuning.algorithm && row.plane === peerPlane);
    const asked = family.find((row) => servesSize(row as AlgorithmRow<CollectiveName>, situation)) ?? family[0];
    if (asked !== undefined) return asked;
  }
  return profiledRow(collective, situation, table)?.row ?? cheapestRow(candidateEstimates(collective, situation, table)) ?? staged;
}
/**
 * Under `auto`, the row an autotune profile names for this call (its entry covering `bytes`): the
 * staged row for `direct`, else the row of that name on the plane the session's peer algorithms
 * run on (on tcp_host_staged the JS plane's, as `ring` asks). None (no entry, or no such row on
 * this plane): the table decides, as for a size the profile does not cover.
 */
export function profiledRow<N extends CollectiveName>(
  collective: N,
  situation: Situation,
  table: AlgorithmTable = ALGORITHMS,
): { readonly row: AlgorithmRow<N>; readonly entry: AutotuneEntry } | undefined {
  const { profile, tuning, worldSize, plane } = situation;
  if (profile === null || tuning.algorithm !== 'auto' || worldSize === 1) return undefined;
  const entry = profileEntry(profile, collective, situation.bytes);
  if (entry === undefined) return undefined;
  const rows = table[collective] as readonly AlgorithmRow<N>[];
  const peerPlane = plane === 'coordinator' ? 'js' : plane;
  const row =
    entry.algorithm === 'direct' ? rows.find((candidate) => candidate.plane === 'coordinator') : rows.find((candidate) => candidate.plane === peerPlane && candidate.name === entry.algorithm);
  if (row === undefined) return undefined;
  return { row, entry };
}
