import { ConfigurationError } from '../errors.js';
import { MAX_FRAME_PAYLOAD_BYTES } from '../protocol/constants.js';
import type { Algorithm, CollectiveName, Collectives } from './algorithm.js';
import { allPairsAllReduce } from './all-reduce/all-pairs.js';
import { pairwiseAllReduce } from './all-reduce/pairwise.js';
import { ringAllReduce } from './all-reduce/ring.js';
import { exchangeAllReduce } from './all-reduce/exchange.js';
import { stagedAllReduce } from './all-reduce/staged.js';
import { pairwiseAllGather } from './all-gather/pairwise.js';
import { ringAllGather } from './all-gather/ring.js';
import { exchangeAllGather } from './all-gather/exchange.js';
import { stagedAllGather } from './all-gather/staged.js';
import { pairwiseAllToAll } from './all-to-all/pairwise.js';
import { exchangeAllToAll } from './all-to-all/exchange.js';
import { stagedAllToAll } from './all-to-all/staged.js';
import { stagedAllToAllV } from './all-to-all-v/staged.js';
import { pairwiseBarrier } from './barrier/pairwise.js';
import { exchangeBarrier } from './barrier/exchange.js';
import { stagedBarrier } from './barrier/staged.js';
import { chainBroadcast } from './broadcast/chain.js';
import { pairwiseBroadcast } from './broadcast/pairwise.js';
import { exchangeBroadcast } from './broadcast/exchange.js';
import { stagedBroadcast } from './broadcast/staged.js';
import { pairwiseGather } from './gather/pairwise.js';
import { exchangeGather } from './gather/exchange.js';
import { stagedGather } from './gather/staged.js';
import { pairwiseReduce } from './reduce/pairwise.js';
import { exchangeReduce } from './reduce/exchange.js';
import { stagedReduce } from './reduce/staged.js';
import { pairwiseReduceScatter } from './reduce-scatter/pairwise.js';
import { ringReduceScatter } from './reduce-scatter/ring.js';
import { exchangeReduceScatter } from './reduce-scatter/exchange.js';
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
import { hierarchyBeatsRing, type ModelledCollective } from './cost-model.js';
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
 * (all-pairs included); `exchange` is the JS plane's small-message path, the agreement and the
 * data in one round of the mesh; `hierarchical` follows the topology groups (GX1_TOPOLOGY_GROUPS);
 * `tree` takes about log2 W dependent steps, one peer per step (recursive doubling, Rabenseifner's,
 * binomial trees, Bruck's, dissemination).
 */
export type AlgorithmFamily = 'staged' | 'ring' | 'pairwise' | 'exchange' | 'hierarchical' | 'tree';

/** A bound of a row's size range: bytes, or the job's GX1_RING_THRESHOLD_BYTES. */
export type SizeBound = number | 'ring threshold';

/**
 * One row of the algorithm table, as data: an algorithm on one plane, the sizes it serves (this
 * rank's tensor in bytes, `from` inclusive, `below` exclusive), when else it fits, and either the
 * schedule it runs (scheduled rows, run by lib/collectives/run-scheduled.ts on their plane) or its
 * own `run` (staged and exchange rows).
 */
export type AlgorithmRow<N extends CollectiveName> = {
  readonly name: string;
  readonly plane: Plane;
  readonly family: AlgorithmFamily;
  readonly from?: SizeBound;
  readonly below?: SizeBound;
  readonly fits?: (situation: Situation) => boolean;
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

/** Smallest world the JS plane's pairwise family serves: at 2 ranks it would be the ring, step for step. */
export const PAIRWISE_MIN_WORLD_SIZE = 3;

/**
 * On the native plane, all-reduces under this size send every rank's whole tensor to every rank
 * (one message's latency); from it, pairwise (each rank sends 2(W-1)/W of it): where the two
 * cross on one host, measured with each forced (bench/README.md, "Medium sizes and broadcast"):
 * all-pairs ahead to 32 KiB at 2 and 4 ranks, level (2 ranks) or behind (4 ranks) from 64 KiB.
 */
export const ALL_PAIRS_BELOW_BYTES = 64 * 1024;

/**
 * On the native plane, broadcasts from this size at 3 ranks and more go down a chain, each rank
 * relaying to the next; under it the root sends to every rank at once (on one host with single
 * copy, every rank reads the root's memory once). Measured with each forced, 4 ranks on one host
 * (bench/README.md, "Medium sizes and broadcast"): at 1 MiB the direct broadcast took 0.80 of the
 * chain's time (faster in 15 of 24 same-round pairs), at 2 and 4 MiB the chain was ahead.
 */
export const CHAIN_FROM_BYTES = 2 << 20;

/** A ring order, a probed or given topology, or channels: the job asked for the ring. */
function ringTuned({ tuning }: Situation): boolean {
  return tuning.ringOrder !== null || tuning.topology !== null || tuning.ringChannels !== 1;
}

/**
 * Whether the JS plane's pairwise family fits a large tensor: every rank on one host (loopback has
 * no links for a ring order to follow), at least 3 ranks, and no ring asked for.
 */
export function pairwiseFits(situation: Situation): boolean {
  return situation.ranksShareHost && situation.worldSize >= PAIRWISE_MIN_WORLD_SIZE && !ringTuned(situation);
}

/**
 * Across hosts, the native plane's pairwise family still serves tensors under this size: two
 * dependent steps instead of the ring's 2(W-1). From it, the ring, whose order can keep the
 * traffic between hosts to two crossings.
 */
export const PAIRWISE_ACROSS_HOSTS_BELOW_BYTES = 4 << 20;

/**
 * The native plane's pairwise family fits where no ring is asked for and either every rank shares
 * one host, the job has 2 ranks (the ring's exchange, in fewer messages), or the tensor is under
 * PAIRWISE_ACROSS_HOSTS_BELOW_BYTES.
 */
export function nativePairwiseFits(situation: Situation): boolean {
  if (ringTuned(situation)) return false;
  return situation.ranksShareHost || situation.worldSize === 2 || situation.bytes < PAIRWISE_ACROSS_HOSTS_BELOW_BYTES;
}

/** The exchange relays every rank's tensor (4 bytes of length each) in one message: it must fit a frame. */
function exchangeFits({ bytes, worldSize }: Situation): boolean {
  return (bytes + 4) * (worldSize + 1) <= MAX_FRAME_PAYLOAD_BYTES;
}

const atLeastThreeRanks = ({ worldSize }: Situation) => worldSize >= 3;

/**
 * Groups that are the hosts (no links weighed) take the hierarchy from this size: below it the
 * pairwise family's two steps beat the hierarchy's four or five (2 hosts x 2 ranks, native plane:
 * at 256 KiB pairwise 1.1-1.2 ms against 1.2-1.7, at 1 MiB 3.3-3.7 ms against 1.7-2.2).
 */
export const HOSTS_HIERARCHY_FROM_BYTES = 1 << 20;

/**
 * Under `auto`, the hierarchical row fits where the job has groups and links to weigh (or groups
 * that are its hosts, from HOSTS_HIERARCHY_FROM_BYTES: each host's links out share one way out,
 * which the model weighs on uniform links), and the cost model (lib/collectives/cost-model.ts)
 * expects it to beat the flat ring (the rows before the ring's already chose the staged path or
 * the pairwise family where they serve better).
 */
const hierarchyPays =
  (collective: ModelledCollective) =>
  (situation: Situation): boolean =>
    situation.groups !== null &&
    (situation.topology !== null || (situation.groupsAreHosts === true && situation.bytes >= HOSTS_HIERARCHY_FROM_BYTES)) &&
    hierarchyBeatsRing(collective, situation);

/**
 * Tree rows run only where GX1_COLLECTIVE_ALGORITHM=tree asks for them: measured at 8 and 16
 * rank processes on one shared 2-core host (bench/README.md, "Tree algorithms"), none beat today's
 * choice beyond the noise, before or after the native agreement moved to the ring of successors
 * (./schedule/header-exchange.ts: a tree no longer pays N-1 headers a rank). After it, 6
 * alternated rounds, same-round tree/auto time ratios: medians 0.61-1.29 per cell, each cell's
 * spanning 0.1-6.9, the tree faster in 2 to 5 of the 6 rounds; so no threshold to set yet.
 */
const onlyWhenAsked = (): boolean => false;

/**
 * Every collective's algorithms, in order of preference per plane; the staged row, which every
 * collective has, comes last. Adding an algorithm is a schedule file under
 * lib/collectives/<collective>/ and a row here per plane it serves (docs/architecture.md).
 */
export const ALGORITHMS: AlgorithmTable = {
  barrier: [
    { name: 'dissemination', plane: 'native', family: 'tree', fits: onlyWhenAsked, schedule: disseminationBarrier },
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseBarrier },
    { name: 'dissemination', plane: 'js', family: 'tree', fits: onlyWhenAsked, schedule: disseminationBarrier },
    { name: 'exchange', plane: 'js', family: 'exchange', run: exchangeBarrier },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedBarrier },
  ],
  allReduce: [
    { name: 'recursive-doubling', plane: 'native', family: 'tree', below: 'ring threshold', fits: onlyWhenAsked, schedule: recursiveDoublingAllReduce },
    { name: 'rabenseifner', plane: 'native', family: 'tree', from: 'ring threshold', fits: onlyWhenAsked, schedule: rabenseifnerAllReduce },
    { name: 'all-pairs', plane: 'native', family: 'pairwise', below: ALL_PAIRS_BELOW_BYTES, schedule: allPairsAllReduce },
    { name: 'hierarchical', plane: 'native', family: 'hierarchical', from: 'ring threshold', fits: hierarchyPays('allReduce'), schedule: hierarchicalAllReduce },
    { name: 'pairwise', plane: 'native', family: 'pairwise', fits: nativePairwiseFits, schedule: pairwiseAllReduce },
    { name: 'ring', plane: 'native', family: 'ring', schedule: ringAllReduce },
    { name: 'recursive-doubling', plane: 'js', family: 'tree', below: 'ring threshold', fits: onlyWhenAsked, schedule: recursiveDoublingAllReduce },
    { name: 'rabenseifner', plane: 'js', family: 'tree', from: 'ring threshold', fits: onlyWhenAsked, schedule: rabenseifnerAllReduce },
    { name: 'exchange', plane: 'js', family: 'exchange', below: 'ring threshold', fits: exchangeFits, run: exchangeAllReduce },
    { name: 'hierarchical', plane: 'js', family: 'hierarchical', from: 'ring threshold', fits: hierarchyPays('allReduce'), schedule: hierarchicalAllReduce },
    { name: 'pairwise', plane: 'js', family: 'pairwise', fits: pairwiseFits, schedule: pairwiseAllReduce },
    { name: 'ring', plane: 'js', family: 'ring', schedule: ringAllReduce },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedAllReduce },
  ],
  reduce: [
    { name: 'binomial', plane: 'native', family: 'tree', fits: onlyWhenAsked, schedule: binomialReduce },
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseReduce },
    { name: 'binomial', plane: 'js', family: 'tree', fits: onlyWhenAsked, schedule: binomialReduce },
    { name: 'exchange', plane: 'js', family: 'exchange', below: 'ring threshold', fits: exchangeFits, run: exchangeReduce },
    { name: 'pairwise', plane: 'js', family: 'pairwise', schedule: pairwiseReduce },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedReduce },
  ],
  broadcast: [
    { name: 'binomial', plane: 'native', family: 'tree', fits: onlyWhenAsked, schedule: binomialBroadcast },
    { name: 'chain', plane: 'native', family: 'ring', from: CHAIN_FROM_BYTES, fits: atLeastThreeRanks, schedule: chainBroadcast },
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseBroadcast },
    { name: 'binomial', plane: 'js', family: 'tree', fits: onlyWhenAsked, schedule: binomialBroadcast },
    { name: 'exchange', plane: 'js', family: 'exchange', below: 'ring threshold', fits: exchangeFits, run: exchangeBroadcast },
    { name: 'pairwise', plane: 'js', family: 'pairwise', fits: pairwiseFits, schedule: pairwiseBroadcast },
    { name: 'chain', plane: 'js', family: 'ring', schedule: chainBroadcast },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedBroadcast },
  ],
  allGather: [
    { name: 'bruck', plane: 'native', family: 'tree', fits: onlyWhenAsked, schedule: bruckAllGather },
    { name: 'hierarchical', plane: 'native', family: 'hierarchical', from: 'ring threshold', fits: hierarchyPays('allGather'), schedule: hierarchicalAllGather },
    { name: 'pairwise', plane: 'native', family: 'pairwise', fits: nativePairwiseFits, schedule: pairwiseAllGather },
    { name: 'ring', plane: 'native', family: 'ring', schedule: ringAllGather },
    { name: 'bruck', plane: 'js', family: 'tree', fits: onlyWhenAsked, schedule: bruckAllGather },
    { name: 'exchange', plane: 'js', family: 'exchange', below: 'ring threshold', fits: exchangeFits, run: exchangeAllGather },
    { name: 'hierarchical', plane: 'js', family: 'hierarchical', from: 'ring threshold', fits: hierarchyPays('allGather'), schedule: hierarchicalAllGather },
    { name: 'pairwise', plane: 'js', family: 'pairwise', fits: pairwiseFits, schedule: pairwiseAllGather },
    { name: 'ring', plane: 'js', family: 'ring', schedule: ringAllGather },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedAllGather },
  ],
  gather: [
    { name: 'binomial', plane: 'native', family: 'tree', fits: onlyWhenAsked, schedule: binomialGather },
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseGather },
    { name: 'binomial', plane: 'js', family: 'tree', fits: onlyWhenAsked, schedule: binomialGather },
    { name: 'exchange', plane: 'js', family: 'exchange', below: 'ring threshold', fits: exchangeFits, run: exchangeGather },
    { name: 'pairwise', plane: 'js', family: 'pairwise', schedule: pairwiseGather },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedGather },
  ],
  scatter: [{ name: 'staged', plane: 'coordinator', family: 'staged', run: stagedScatter }],
  reduceScatter: [
    { name: 'hierarchical', plane: 'native', family: 'hierarchical', from: 'ring threshold', fits: hierarchyPays('reduceScatter'), schedule: hierarchicalReduceScatter },
    { name: 'pairwise', plane: 'native', family: 'pairwise', fits: nativePairwiseFits, schedule: pairwiseReduceScatter },
    { name: 'ring', plane: 'native', family: 'ring', schedule: ringReduceScatter },
    { name: 'exchange', plane: 'js', family: 'exchange', below: 'ring threshold', fits: exchangeFits, run: exchangeReduceScatter },
    { name: 'hierarchical', plane: 'js', family: 'hierarchical', from: 'ring threshold', fits: hierarchyPays('reduceScatter'), schedule: hierarchicalReduceScatter },
    { name: 'pairwise', plane: 'js', family: 'pairwise', fits: pairwiseFits, schedule: pairwiseReduceScatter },
    { name: 'ring', plane: 'js', family: 'ring', schedule: ringReduceScatter },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedReduceScatter },
  ],
  allToAll: [
    { name: 'pairwise', plane: 'native', family: 'pairwise', schedule: pairwiseAllToAll },
    { name: 'exchange', plane: 'js', family: 'exchange', below: 'ring threshold', fits: exchangeFits, run: exchangeAllToAll },
    { name: 'pairwise', plane: 'js', family: 'pairwise', schedule: pairwiseAllToAll },
    { name: 'staged', plane: 'coordinator', family: 'staged', run: stagedAllToAll },
  ],
  allToAllV: [{ name: 'staged', plane: 'coordinator', family: 'staged', run: stagedAllToAllV }],
};

function bound(value: SizeBound, tuning: CollectiveTuning): number {
  return value === 'ring threshold' ? tuning.ringThresholdBytes : value;
}

/** Whether this size lies in `row`'s range. */
function servesSize(row: AlgorithmRow<CollectiveName>, { bytes, tuning }: Situation): boolean {
  if (row.from !== undefined && bytes < bound(row.from, tuning)) return false;
  return row.below === undefined || bytes < bound(row.below, tuning);
}

/** Whether `row` serves this size and fits the situation. */
function serves(row: AlgorithmRow<CollectiveName>, situation: Situation): boolean {
  return servesSize(row, situation) && (row.fits?.(situation) ?? true);
}

/**
 * Chooses the algorithm for one call, as the seed's planner does with its policy:
 * - one rank, or `direct`: the staged row (through the coordinator);
 * - `ring` (`hierarchical`, `tree`): the collective's ring-family (hierarchical, tree) row on the session's
 *   plane (on tcp_host_staged, the JS plane's, its pieces travelling the coordinator's
 *   point-to-point rails): the first whose sizes (`from`, `below`) take this one, else the first
 *   (a tree all-reduce: recursive doubling under the ring threshold, Rabenseifner's from it); a
 *   collective without one as `auto`;
 * - `auto`: the row the autotune profile measured best for this size, where it has one on the
 *   session's plane (`profiledRow`); else the first row of the session's plane that serves the
 *   size and fits; else staged.
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
  return profiledRow(collective, situation, table)?.row ?? rows.find((row) => row.plane === plane && serves(row as AlgorithmRow<CollectiveName>, situation)) ?? staged;
}

/**
 * Under `auto`, the row an autotune profile names for this call (its entry covering `bytes`): the
 * staged row for `direct`, else the row of that name on the plane the session's peer algorithms
 * run on (on tcp_host_staged the JS plane's, as `ring` asks). None (no entry, no such row, or an
 * exchange whose message would not fit a frame): the table decides, as for a size the profile
 * does not cover.
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
  if (row === undefined || (row.family === 'exchange' && !exchangeFits(situation))) return undefined;
  return { row, entry };
}
