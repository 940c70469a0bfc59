/**
 * Every collective, for many element types and world sizes 1..8, against the reference model in
 * spec/helpers/collective-model.ts (reductions: the TypeScript reference kernels, bit for bit).
 * Ranks run in this process over real loopback TCP through a real coordinator.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { DType } from '../../lib/protocol/element-type.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import {
  buildCase,
  type CaseShape,
  type CollectiveCase,
  describeCase,
  modelCollective,
  opsFor,
  type Outcome,
  runCollective,
  seededRandom,
} from '../../lib/testing/index.js';
import { startJob, type TestJob } from '../helpers/job.js';

const WORLD_SIZES = [1, 2, 3, 5, 8];
const DTYPES: readonly DType[] = ['u8', 'i8', 'u16', 'i32', 'u32', 'i64', 'u64', 'f16', 'bf16', 'f32', 'f64'];

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

async function openJob(worldSize: number) {
  const job = await startJob(worldSize, { timeoutMs: 20_000 });
  jobs.push(job);
  return job;
}

/** Runs the cases in order on every rank at once (each rank pipelines its own list). */
async function runAll(sessions: readonly RankSession[], cases: readonly CollectiveCase[]): Promise<Outcome[][]> {
  return Promise.all(
    sessions.map(async (session) => {
      const outcomes: Outcome[] = [];
      for (const c of cases) outcomes.push(await runCollective(session, c));
      return outcomes;
    }),
  );
}

/** Checks every rank's outcome of every case against the model, and that no input was modified. */
function expectModel(cases: readonly CollectiveCase[], observed: Outcome[][], worldSize: number, before: (Uint8Array | null)[][]) {
  cases.forEach((c, index) => {
    const expected = modelCollective(c, worldSize);
    for (let rank = 0; rank < worldSize; rank++) {
      const what = `${describeCase(c)}, rank ${rank} of ${worldSize}`;
      const got = observed[rank]![index]!;
      const want = expected[rank]!;
      expect(got.bytes === null, `${what}: null result`).toBe(want.bytes === null);
      if (want.bytes !== null) {
        expect({ dtype: got.dtype, className: got.className, tagged: got.tagged }, `${what}: result form`).toEqual({
          dtype: want.dtype,
          className: want.className,
          tagged: want.tagged,
        });
        expect(Buffer.from(got.bytes!).equals(Buffer.from(want.bytes)), `${what}: result bytes`).toBe(true);
      }
      if (want.counts !== undefined) expect(got.counts, `${what}: counts`).toEqual(want.counts);
      const input = c.inputs[rank];
      if (input != null) expect(Buffer.from(input).equals(Buffer.from(before[index]![rank]!)), `${what}: input unchanged`).toBe(true);
    }
  });
}

/** Every collective for `dtype`: each reduction with every op the dtype allows, roots spread over the ranks. */
function casesFor(dtype: DType, worldSize: number, seed: number): CollectiveCase[] {
  const random = seededRandom(seed);
  const last = worldSize - 1;
  const middle = worldSize >> 1;
  const shapes: CaseShape[] = [
    { kind: 'barrier', dtype, count: 0 },
    { kind: 'broadcast', dtype, root: 0, count: 5 },
    { kind: 'broadcast', dtype, root: last, count: 3, tagged: true },
    { kind: 'allGather', dtype, count: 3 },
    { kind: 'allGather', dtype, count: 1, tagged: true },
    { kind: 'gather', dtype, root: last, count: 4 },
    { kind: 'gather', dtype, root: middle, count: 2, tagged: true },
    { kind: 'scatter', dtype, root: 0, count: 2 },
    // Some non-roots pass a same-shaped array instead of null.
    { kind: 'scatter', dtype, root: last, count: 3, tagged: true, nullRanks: Array.from({ length: worldSize }, (_, rank) => rank).filter((rank) => rank % 2 === 0) },
    { kind: 'allToAll', dtype, count: 2 },
    { kind: 'allToAll', dtype, count: 1, tagged: true },
    { kind: 'allToAllV', dtype, count: 3 },
    { kind: 'allToAllV', dtype, count: 2, tagged: true },
  ];
  opsFor(dtype).forEach((op, index) => {
    const tagged = index % 2 === 1;
    shapes.push({ kind: 'allReduce', dtype, op, count: 7, tagged });
    shapes.push({ kind: 'reduce', dtype, op, root: index % worldSize, count: 4, tagged: !tagged });
    shapes.push({ kind: 'reduceScatter', dtype, op, count: 2, tagged });
  });
  return shapes.map((shape) => buildCase(shape, worldSize, random));
}

/** The same collectives with zero-length tensors (and all-zero allToAllV counts). */
function zeroLengthCases(dtype: DType, worldSize: number): CollectiveCase[] {
  const random = seededRandom(7);
  const last = worldSize - 1;
  const zeros = Array.from({ length: worldSize }, () => new Array<number>(worldSize).fill(0));
  const shapes: CaseShape[] = [
    { kind: 'broadcast', dtype, root: last, count: 0 },
    { kind: 'allGather', dtype, count: 0 },
    { kind: 'gather', dtype, root: last, count: 0 },
    { kind: 'scatter', dtype, root: last, count: 0 },
    { kind: 'allToAll', dtype, count: 0 },
    { kind: 'allToAllV', dtype, count: 0, sendCounts: zeros },
    { kind: 'allReduce', dtype, op: 'sum', count: 0 },
    { kind: 'allReduce', dtype, op: 'avg', count: 0, tagged: true },
    { kind: 'reduce', dtype, op: 'max', root: last, count: 0 },
    { kind: 'reduceScatter', dtype, op: 'sum', count: 0 },
  ];
  return shapes.map((shape) => buildCase(shape, worldSize, random));
}

async function check(worldSize: number, cases: CollectiveCase[]) {
  const job = await openJob(worldSize);
  const before = cases.map((c) => c.inputs.map((input) => (input === null ? null : Uint8Array.from(input))));
  const observed = await runAll(job.sessions, cases);
  expectModel(cases, observed, worldSize, before);
  await Promise.all(job.sessions.map((session) => session.close()));
  await expect(job.coordinator.done).resolves.toBeUndefined();
}

for (const worldSize of WORLD_SIZES) {
  describe(`world size ${worldSize}`, () => {
    DTYPES.forEach((dtype, index) => {
      it(`${dtype}: every collective matches the model`, async () => {
        await check(worldSize, casesFor(dtype, worldSize, 1000 * worldSize + index));
      });
    });

    it('zero-length tensors are valid in every collective', async () => {
      await check(worldSize, [...zeroLengthCases('f32', worldSize), ...zeroLengthCases('i64', worldSize), ...zeroLengthCases('bf16', worldSize)]);
    });
  });
}

describe('results and inputs', () => {
  it('a reduction result is a new array of the caller class, never the input itself', async () => {
    const job = await openJob(2);
    await Promise.all(
      job.sessions.map(async (session) => {
        const input = Float64Array.of(1, 2, 3);
        const tagged = { dtype: 'bf16' as const, data: Uint16Array.of(0x3f80, 0x4000) };
        const sum = await session.allReduce(input);
        expect(sum).toBeInstanceOf(Float64Array);
        expect(sum).not.toBe(input);
        expect(Array.from(sum)).toEqual([2, 4, 6]);
        const half = await session.allReduce(tagged, 'max');
        expect(half).not.toBe(tagged);
        expect(half.dtype).toBe('bf16');
        expect(half.data).toBeInstanceOf(Uint16Array);
        expect(Array.from(half.data)).toEqual([0x3f80, 0x4000]);
        // A view into a larger buffer at an odd element offset is sent as exactly its elements.
        const backing = new Int32Array(8).map((_, index) => index * 10 + session.rank);
        const gathered = await session.allGather(backing.subarray(3, 5));
        expect(Array.from(gathered)).toEqual([30, 40, 31, 41]);
        await session.close();
      }),
    );
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('integer sums and products wrap, avg truncates toward zero', async () => {
    const job = await openJob(3);
    await Promise.all(
      job.sessions.map(async (session) => {
        expect(Array.from(await session.allReduce(Uint8Array.of(200)))).toEqual([(200 * 3) % 256]);
        expect(Array.from(await session.allReduce(Int32Array.of(-7 + session.rank), 'avg'))).toEqual([Math.trunc((-7 - 6 - 5) / 3)]);
        expect(Array.from(await session.allReduce(BigInt64Array.of(2n ** 62n)))).toEqual([BigInt.asIntN(64, 3n * 2n ** 62n)]);
        expect(Array.from(await session.allReduce(Int8Array.of(100), 'prod'))).toEqual([64]); // 10^6 mod 256
        expect(Array.from(await session.allReduce(Uint32Array.of(1 << session.rank), 'bor'))).toEqual([7]);
        expect(Array.from(await session.allReduce(BigUint64Array.of(BigInt(session.rank + 1)), 'bxor'))).toEqual([1n ^ 2n ^ 3n]);
        await session.close();
      }),
    );
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });
});

describe('disagreements only the rank itself can see', () => {
  // A rank that passes null to scatter declares no shape on the wire; it checks what arrives.
  it('scatter: a null-passing rank whose countPerRank differs from the root is told', async () => {
    const job = await openJob(2);
    const [root, other] = job.sessions as [RankSession, RankSession];
    const [fromRoot, fromOther] = await Promise.allSettled([root.scatter(Int32Array.of(1, 2, 3, 4), 0, 2), other.scatter(null, 0, 3)]);
    expect(fromOther.status, 'the rank that asked for 3 elements').toBe('rejected');
    expect(String((fromOther as PromiseRejectedResult).reason)).toMatch(/3/);
    void fromRoot;
  });
});
