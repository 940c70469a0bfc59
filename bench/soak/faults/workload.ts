/**
 * One iteration of the soak's mix, as every rank runs it: all-reduces (f32 and i32, sum, max or
 * min), a broadcast, an all-gather, a reduce-scatter, an all-to-all, a barrier, and a tagged
 * send and receive with each neighbour. The size cycles through SIZES from one iteration to the
 * next, so the small-tensor algorithms (all-pairs, the exchanges) and the large-tensor ones
 * (pairwise, the chain broadcast) both run. Each result is checked against what this rank
 * computes from every rank's inputs (inputs.ts).
 */
import type { RankSession } from '../../../lib/session/rank-session.js';
import { firstDifference, inputOf, seedOf, type SoakDType } from './inputs.js';
import type { Tally } from './messages.js';

/** Bytes per rank's tensor, 8 B to 1 MiB. */
export const SIZES = [8, 4096, 65_536, 1_048_576];

/** Descriptions of wrong results kept per epoch: enough to see what went wrong, bounded in a long run. */
const EXAMPLES_KEPT = 5;

type Reducer = (a: number, b: number) => number;

/** The reductions checked, exact on integers in f32 and i32 alike (`avg` and `prod` are not). */
const REDUCERS = { sum: (a: number, b: number) => a + b, max: Math.max, min: Math.min } satisfies Record<string, Reducer>;

const OPS = Object.keys(REDUCERS) as (keyof typeof REDUCERS)[];

/** `parts` reduced element by element (each part as long as the first). */
function reduceParts(parts: readonly ArrayLike<number>[], reduce: Reducer): Float64Array {
  const result = Float64Array.from(parts[0]!);
  for (const part of parts.slice(1)) for (let index = 0; index < result.length; index++) result[index] = reduce(result[index]!, part[index]!);
  return result;
}

function concat(parts: readonly ArrayLike<number>[]): Float64Array {
  const result = new Float64Array(parts.reduce((length, part) => length + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    result.set(part, offset);
    offset += part.length;
  }
  return result;
}

export async function runIteration(session: RankSession, epoch: number, iteration: number, tally: Tally): Promise<void> {
  const { rank, worldSize } = session;
  const bytes = SIZES[iteration % SIZES.length]!;
  const elements = bytes / 4;
  // Reduce-scatter and all-to-all split the tensor into one block per rank.
  const blocked = worldSize * Math.ceil(elements / worldSize);
  const dtype: SoakDType = iteration % 2 === 0 ? 'f32' : 'i32';
  const op = OPS[iteration % OPS.length]!;
  const ranks = Array.from({ length: worldSize }, (_, source) => source);
  // Each operation's inputs have a salt of their own; a rank computes only the inputs it checks against.
  const input = (salt: number, type: SoakDType, count: number, source: number) => inputOf(type, count, seedOf(epoch, iteration, source, salt));
  const check = (what: string, actual: ArrayLike<number>, expected: ArrayLike<number>) => {
    tally.ops += 1;
    const at = firstDifference(actual, expected);
    if (at < 0) return;
    tally.wrong += 1;
    if (tally.wrongExamples.length < EXAMPLES_KEPT) {
      tally.wrongExamples.push(`${what} (${bytes} B per rank, iteration ${iteration}): element ${at} is ${actual[at]}, expected ${expected[at]}`);
    }
  };

  for (const [salt, type] of [[1, 'f32'], [2, 'i32']] as const) {
    const data = ranks.map((source) => input(salt, type, elements, source));
    check(`allReduce ${type} ${op}`, await session.allReduce(data[rank]!, op), reduceParts(data, REDUCERS[op]));
  }

  const root = iteration % worldSize;
  check(`broadcast ${dtype} from ${root}`, await session.broadcast(input(3, dtype, elements, rank), root), input(3, dtype, elements, root));

  const gathered = ranks.map((source) => input(4, dtype, elements, source));
  check(`allGather ${dtype}`, await session.allGather(gathered[rank]!), concat(gathered));

  // Reduce-scatter and all-to-all: this rank's block of every rank's input.
  const block = blocked / worldSize;
  const blocksFor = (salt: number) => ranks.map((source) => input(salt, dtype, blocked, source).subarray(rank * block, (rank + 1) * block));
  check(`reduceScatter ${dtype} sum`, await session.reduceScatter(input(5, dtype, blocked, rank), 'sum'), reduceParts(blocksFor(5), REDUCERS.sum));
  check(`allToAll ${dtype}`, await session.allToAll(input(6, dtype, blocked, rank)), concat(blocksFor(6)));

  await session.barrier();
  tally.ops += 1;

  // Point-to-point: a message to each neighbour under a tag of its own (one neighbour may be both).
  const right = (rank + 1) % worldSize;
  const left = (rank + worldSize - 1) % worldSize;
  const shape = { dtype, count: elements };
  const [, , fromLeft, fromRight] = await Promise.all([
    session.send(right, 2 * iteration, input(7, dtype, elements, rank)),
    session.send(left, 2 * iteration + 1, input(8, dtype, elements, rank)),
    session.receive(left, 2 * iteration, shape),
    session.receive(right, 2 * iteration + 1, shape),
  ]);
  check(`receive ${dtype} from ${left}`, fromLeft, input(7, dtype, elements, left));
  check(`receive ${dtype} from ${right}`, fromRight, input(8, dtype, elements, right));
}
