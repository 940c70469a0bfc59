import { ConfigurationError } from '../errors.js';
import { MAX_FRAME_PAYLOAD_BYTES } from '../protocol/constants.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import type { Algorithm, CollectiveName, Collectives } from './algorithm.js';
import { ringAllGather } from './all-gather/ring.js';
import { ringAllReduce } from './all-reduce/ring.js';
import { pairwiseAllReduce } from './all-reduce/pairwise.js';
import { pairwiseAllGather } from './all-gather/pairwise.js';
import { pairwiseReduceScatter } from './reduce-scatter/pairwise.js';
import { ringReduceScatter } from './reduce-scatter/ring.js';
import { stagedAllReduce } from './all-reduce/staged.js';
import { nativeAllReduce } from './all-reduce/native.js';
import { nativeAllGather } from './all-gather/native.js';
import { nativeAllToAll } from './all-to-all/native.js';
import { nativeBroadcast } from './broadcast/native.js';
import { nativeGather } from './gather/native.js';
import { nativeReduceScatter } from './reduce-scatter/native.js';
import { stagedAllGather } from './all-gather/staged.js';
import { stagedAllToAll } from './all-to-all/staged.js';
import { stagedAllToAllV } from './all-to-all-v/staged.js';
import { stagedBarrier } from './barrier/staged.js';
import { nativeBarrier } from './barrier/native.js';
import { chainBroadcast } from './broadcast/chain.js';
import { pairwiseBroadcast } from './broadcast/pairwise.js';
import { stagedBroadcast } from './broadcast/staged.js';
import { stagedGather } from './gather/staged.js';
import { stagedReduce } from './reduce/staged.js';
import { stagedReduceScatter } from './reduce-scatter/staged.js';
import { stagedScatter } from './scatter/staged.js';
import { exchangeAllGather } from './all-gather/exchange.js';
import { exchangeAllReduce } from './all-reduce/exchange.js';
import { exchangeAllToAll } from './all-to-all/exchange.js';
import { exchangeBarrier } from './barrier/exchange.js';
import { exchangeBroadcast } from './broadcast/exchange.js';
import { exchangeGather } from './gather/exchange.js';
import { exchangeReduce } from './reduce/exchange.js';
import { exchangeReduceScatter } from './reduce-scatter/exchange.js';
import type { AlgorithmPolicy } from '../topology/ring-tuning.js';
import type { CollectiveTuning } from './tuning.js';

/**
 * Families of algorithms. `direct` and `ring` are what GX1_COLLECTIVE_ALGORITHM calls them: `direct`
 * goes through the coordinator (the staged path), `ring` moves data rank to rank along the ring
 * order (rings, chains). `exchange` is rxccl's small-message path on the mesh: the agreement and
 * the data in one round between every pair of ranks, no coordinator hop. `pairwise` moves large
 * tensors between ranks directly, in one or two steps (the all-reduce, all-gather, reduce-scatter
 * and broadcast), where the ranks share one host. `native` runs on the native data plane (the
 * addon's thread over data links of its own), where the session has one.
 */
export type AlgorithmFamily = Exclude<AlgorithmPolicy, 'auto' | 'hierarchical'> | 'exchange' | 'pairwise' | 'native';

/** One row of the algorithm table. */
export interface AlgorithmRow<N extends CollectiveName> {
  readonly name: string;
  readonly family: AlgorithmFamily;
  readonly run: Algorithm<Collectives[N][0], Collectives[N][1]>;
}

type AlgorithmTable = { readonly [N in CollectiveName]: readonly AlgorithmRow<N>[] };

/**
 * Every collective's algorithms. Adding one is a file under lib/collectives/<collective>/ and a row
 * here; the `direct` row, which every collective has, comes last.
 */
export const ALGORITHMS: AlgorithmTable = {
  barrier: [
    { name: 'native', family: 'native', run: nativeBarrier },
    { name: 'exchange', family: 'exchange', run: exchangeBarrier },
    { name: 'staged', family: 'direct', run: stagedBarrier },
  ],
  allReduce: [
    { name: 'native', family: 'native', run: nativeAllReduce },
    { name: 'pairwise', family: 'pairwise', run: pairwiseAllReduce },
    { name: 'ring', family: 'ring', run: ringAllReduce },
    { name: 'exchange', family: 'exchange', run: exchangeAllReduce },
    { name: 'staged', family: 'direct', run: stagedAllReduce },
  ],
  reduce: [
    { name: 'exchange', family: 'exchange', run: exchangeReduce },
    { name: 'staged', family: 'direct', run: stagedReduce },
  ],
  broadcast: [
    { name: 'native', family: 'native', run: nativeBroadcast },
    { name: 'pairwise', family: 'pairwise', run: pairwiseBroadcast },
    { name: 'chain', family: 'ring', run: chainBroadcast },
    { name: 'exchange', family: 'exchange', run: exchangeBroadcast },
    { name: 'staged', family: 'direct', run: stagedBroadcast },
  ],
  allGather: [
    { name: 'native', family: 'native', run: nativeAllGather },
    { name: 'pairwise', family: 'pairwise', run: pairwiseAllGather },
    { name: 'ring', family: 'ring', run: ringAllGather },
    { name: 'exchange', family: 'exchange', run: exchangeAllGather },
    { name: 'staged', family: 'direct', run: stagedAllGather },
  ],
  gather: [
    { name: 'native', family: 'native', run: nativeGather },
    { name: 'exchange', family: 'exchange', run: exchangeGather },
    { name: 'staged', family: 'direct', run: stagedGather },
  ],
  scatter: [{ name: 'staged', family: 'direct', run: stagedScatter }],
  reduceScatter: [
    { name: 'native', family: 'native', run: nativeReduceScatter },
    { name: 'pairwise', family: 'pairwise', run: pairwiseReduceScatter },
    { name: 'ring', family: 'ring', run: ringReduceScatter },
    { name: 'exchange', family: 'exchange', run: exchangeReduceScatter },
    { name: 'staged', family: 'direct', run: stagedReduceScatter },
  ],
  allToAll: [
    { name: 'native', family: 'native', run: nativeAllToAll },
    { name: 'exchange', family: 'exchange', run: exchangeAllToAll },
    { name: 'staged', family: 'direct', run: stagedAllToAll },
  ],
  allToAllV: [{ name: 'staged', family: 'direct', run: stagedAllToAllV }],
};

/** What the choice depends on. */
export interface Situation {
  readonly transport: CollectiveTransport;
  readonly worldSize: number;
  /** This rank's tensor in bytes (every rank passes the same size where the choice matters). */
  readonly bytes: number;
  readonly tuning: CollectiveTuning;
  /** Every rank of the job advertises this rank's host (tcp_peer; the same answer on every rank). */
  readonly ranksShareHost: boolean;
  /** The session has the native data plane (tcp_peer, `dataPlane: 'native'`; every rank alike). */
  readonly nativeDataPlane?: boolean;
}

/** Smallest world the pairwise family serves: at 2 ranks it would be the ring, step for step. */
export const PAIRWISE_MIN_WORLD_SIZE = 3;

/**
 * Whether `auto` takes the pairwise family for a large tensor: every rank on one host (loopback
 * has no links for a ring order to follow), at least 3 ranks, and no ring tuning given (an
 * explicit or probed ring order, or channels, ask for the ring).
 */
export function pairwiseFits(situation: Situation): boolean {
  const { tuning } = situation;
  return situation.ranksShareHost && situation.worldSize >= PAIRWISE_MIN_WORLD_SIZE && tuning.ringOrder === null && tuning.topology === null && tuning.ringChannels === 1;
}

/**
 * Chooses the algorithm for one call, as the seed's planner does with its policy:
 * - one rank, or `direct`: through the coordinator;
 * - `ring`: the collective's ring-family algorithm, on either transport (on tcp_host_staged its
 *   pieces travel the coordinator's point-to-point rails); collectives without one as `auto`;
 * - `auto`: on tcp_peer with the native data plane, the collective's native algorithm at any
 *   size where it has one; else from `ringThresholdBytes` the pairwise family where it fits
 *   (`pairwiseFits`), else the ring family; the exchange below it (pairwise or relayed through
 *   rank 0, see `exchangeOnMesh`); else direct.
 */
export function selectAlgorithm<N extends CollectiveName>(collective: N, situation: Situation, table: AlgorithmTable = ALGORITHMS): AlgorithmRow<N> {
  const rows = table[collective] as readonly AlgorithmRow<N>[];
  const direct = rows.find((row) => row.family === 'direct');
  if (direct === undefined) throw new ConfigurationError(`no direct algorithm for ${collective}`);
  const { tuning, worldSize, transport, bytes } = situation;
  if (worldSize === 1 || tuning.algorithm === 'direct') return direct;
  const ring = rows.find((row) => row.family === 'ring');
  if (ring !== undefined && tuning.algorithm === 'ring') return ring;
  if (transport !== 'tcp_peer') return direct;
  const native = situation.nativeDataPlane === true ? rows.find((row) => row.family === 'native') : undefined;
  if (native !== undefined) return native;
  // A relayed exchange hands every rank all W tensors in one message (with 4 bytes of length
  // each): past the frame limit go direct, which names the limit.
  const exchange = (bytes + 4) * (worldSize + 1) <= MAX_FRAME_PAYLOAD_BYTES ? rows.find((row) => row.family === 'exchange') : undefined;
  if (bytes < tuning.ringThresholdBytes) return exchange ?? direct;
  const pairwise = pairwiseFits(situation) ? rows.find((row) => row.family === 'pairwise') : undefined;
  return pairwise ?? ring ?? direct;
}
