/**
 * Every rank contributes a tensor, allReduce combines them, and every rank checks what it got.
 *
 *   npm start                                   # = rxccl launch -n 4 -- tsx examples/allreduce.ts
 *   rxccl launch -n 3 -- tsx examples/allreduce.ts
 *
 * openSession() needs no options under a launcher: it reads GX1_RANK, GX1_COORDINATOR, ...
 * (In your own project, import from 'rxccl' instead of '../lib/index.js'.)
 */
import { openSession } from '../lib/index.js';

const session = await openSession();
const { rank, worldSize } = session;

// Rank r contributes (r + 1) * [1, 2, 3, 4]; the sum over ranks is (1 + 2 + ... + N) * [1, 2, 3, 4].
const contribution = Float32Array.from([1, 2, 3, 4], (value) => value * (rank + 1));
const sum = await session.allReduce(contribution, 'sum');
const expected = Float32Array.from([1, 2, 3, 4], (value) => (value * worldSize * (worldSize + 1)) / 2);

// Integer tensors and other reductions work alike: the largest rank is worldSize - 1 everywhere.
const [largestRank] = await session.allReduce(Int32Array.of(rank), 'max');

const ok = sum.every((value, index) => value === expected[index]) && largestRank === worldSize - 1;
console.log(`rank ${rank}/${worldSize}: sent [${contribution.join(', ')}] -> sum [${sum.join(', ')}], max rank ${largestRank} ${ok ? 'ok' : 'MISMATCH'}`);
await session.close();
if (!ok) {
  console.error(`expected sum [${expected.join(', ')}] and max rank ${worldSize - 1}`);
  process.exitCode = 1;
}
