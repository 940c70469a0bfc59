import { ConfigurationError } from '../errors.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import type { Algorithm, CollectiveName, Collectives } from './algorithm.js';
import { ringAllReduce } from './all-reduce/ring.js';
import { stagedAllReduce } from './all-reduce/staged.js';
import { stagedAllGather } from './all-gather/staged.js';
import { stagedAllToAll } from './all-to-all/staged.js';
import { stagedAllToAllV } from './all-to-all-v/staged.js';
import { stagedBarrier } from './barrier/staged.js';
import { chainBroadcast } from './broadcast/chain.js';
import { stagedBroadcast } from './broadcast/staged.js';
import { stagedGather } from './gather/staged.js';
import { stagedReduce } from './reduce/staged.js';
import { stagedReduceScatter } from './reduce-scatter/staged.js';
import { stagedScatter } from './scatter/staged.js';
import type { AlgorithmPolicy } from '../topology/ring-tuning.js';
import type { CollectiveTuning } from './tuning.js';

/**
 * One row of the algorithm table. `family` is what GX1_COLLECTIVE_ALGORITHM calls it: `direct`
 * goes through the coordinator (the staged path), `ring` moves data rank to rank along the ring
 * order (rings, chains).
 */
export interface AlgorithmRow<N extends CollectiveName> {
  readonly name: string;
  readonly family: Exclude<AlgorithmPolicy, 'auto'>;
  readonly run: Algorithm<Collectives[N][0], Collectives[N][1]>;
}

type AlgorithmTable = { readonly [N in CollectiveName]: readonly AlgorithmRow<N>[] };

/**
 * Every collective's algorithms. Adding one is a file under lib/collectives/<collective>/ and a row
 * here; rows of the `ring` family come before the `direct` one they replace.
 */
export const ALGORITHMS: AlgorithmTable = {
  barrier: [{ name: 'staged', family: 'direct', run: stagedBarrier }],
  allReduce: [
    { name: 'ring', family: 'ring', run: ringAllReduce },
    { name: 'staged', family: 'direct', run: stagedAllReduce },
  ],
  reduce: [{ name: 'staged', family: 'direct', run: stagedReduce }],
  broadcast: [
    { name: 'chain', family: 'ring', run: chainBroadcast },
    { name: 'staged', family: 'direct', run: stagedBroadcast },
  ],
  allGather: [{ name: 'staged', family: 'direct', run: stagedAllGather }],
  gather: [{ name: 'staged', family: 'direct', run: stagedGather }],
  scatter: [{ name: 'staged', family: 'direct', run: stagedScatter }],
  reduceScatter: [{ name: 'staged', family: 'direct', run: stagedReduceScatter }],
  allToAll: [{ name: 'staged', family: 'direct', run: stagedAllToAll }],
  allToAllV: [{ name: 'staged', family: 'direct', run: stagedAllToAllV }],
};

/** What the choice depends on. */
export interface Situation {
  readonly transport: CollectiveTransport;
  readonly worldSize: number;
  /** This rank's tensor in bytes (every rank passes the same size where the choice matters). */
  readonly bytes: number;
  readonly tuning: CollectiveTuning;
}

/**
 * Chooses the algorithm for one call, as the seed's planner does with its policy:
 * - one rank, or `direct`: through the coordinator;
 * - `ring`: the collective's ring-family algorithm, on either transport (on tcp_host_staged its
 *   pieces travel the coordinator's point-to-point rails); collectives without one go direct;
 * - `auto`: the ring family on tcp_peer from `ringThresholdBytes`, else direct.
 * Every rank must choose alike: the coordinator refuses a collective whose ranks chose differently.
 */
export function selectAlgorithm<N extends CollectiveName>(collective: N, situation: Situation, table: AlgorithmTable = ALGORITHMS): AlgorithmRow<N> {
  const rows = table[collective] as readonly AlgorithmRow<N>[];
  const direct = rows.find((row) => row.family === 'direct');
  if (direct === undefined) throw new ConfigurationError(`no direct algorithm for ${collective}`);
  const { tuning, worldSize, transport, bytes } = situation;
  if (worldSize === 1 || tuning.algorithm === 'direct') return direct;
  const ring = rows.find((row) => row.family === 'ring');
  if (ring === undefined) return direct;
  if (tuning.algorithm === 'ring') return ring;
  return transport === 'tcp_peer' && bytes >= tuning.ringThresholdBytes ? ring : direct;
}
