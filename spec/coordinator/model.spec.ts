/**
 * Model-based tests: fast-check generates random programs of collectives and point-to-point
 * messages for every rank at once, runs them on a real coordinator with in-process ranks, and
 * compares every result with an in-memory model (spec/helpers/collective-model.ts for the
 * collectives, `modelMessages` below for point-to-point matching).
 *
 * A program is a list of steps. In a step every rank posts all its sends, then all its receives,
 * then starts the step's collective (if any), and only then awaits them all: point-to-point work
 * on several tags and rails is multiplexed and runs concurrently with the ordered collective.
 *
 * Steps are not fenced: a rank that is done with a step goes on with the next while others are
 * still in it, so its next sends may reach a peer whose receives of the earlier step are still
 * pending. Receives therefore use ANY source only where the match is unambiguous over the whole
 * program: when every message to that rank with that tag on that rail comes from one source.
 * Then FIFO matching (per source, in program order) gives the same pairs whatever order the
 * coordinator or the peers see the frames in, and the model can predict them.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { DType } from '../../lib/protocol/element-type.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { arrayClassOf } from '../../lib/tensor.js';
import {
  buildCase,
  type CaseShape,
  type CollectiveCase,
  type CollectiveKind,
  COLLECTIVE_KINDS,
  describeCase,
  isHalf,
  modelCollective,
  opsFor,
  type Outcome,
  outcomeOf,
  randomBytes,
  REDUCING_KINDS,
  runCollective,
  seededRandom,
  tensorOf,
} from '../../lib/testing/index.js';
import { rejection, startJob, type TestJob } from '../helpers/job.js';

const DTYPES: readonly DType[] = ['u8', 'i16', 'i32', 'u64', 'i64', 'f16', 'bf16', 'f32', 'f64'];
const TAGS: readonly bigint[] = [0n, 1n, 2n, 3n, 7n, 2n ** 53n + 1n, 2n ** 64n - 1n];

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

// ---- programs ---------------------------------------------------------------------------------

interface MessageShape {
  readonly source: number;
  readonly destination: number;
  readonly tag: bigint;
  /** Pass the tag as a number where it is a safe integer. */
  readonly tagAsNumber: boolean;
  /** An explicit rail, or undefined for the default (tag % rails). */
  readonly rail: number | undefined;
  readonly dtype: DType;
  readonly count: number;
  readonly tagged: boolean;
  /** Receive with source null (ANY), where unambiguous. */
  readonly anySource: boolean;
}

interface Message extends MessageShape {
  readonly bytes: Uint8Array;
}

interface Step {
  readonly messages: readonly Message[];
  readonly collective: CollectiveCase | null;
}

interface Program {
  readonly transport: CollectiveTransport;
  readonly worldSize: number;
  readonly rails: number;
  readonly steps: readonly Step[];
}

function railOf(message: MessageShape, rails: number): number {
  return message.rail ?? Number(message.tag % BigInt(rails));
}

const dtypeArb = fc.constantFrom(...DTYPES);

function collectiveShapeArb(worldSize: number): fc.Arbitrary<CaseShape> {
  return fc
    .record({
      kind: fc.constantFrom(...COLLECTIVE_KINDS),
      dtype: dtypeArb,
      opIndex: fc.nat(),
      root: fc.integer({ min: 0, max: worldSize - 1 }),
      count: fc.integer({ min: 0, max: 3 }),
      tagged: fc.boolean(),
      nullRanks: fc.subarray(Array.from({ length: worldSize }, (_, rank) => rank)),
    })
    .map(({ kind, dtype, opIndex, root, count, tagged, nullRanks }) => {
      const ops = opsFor(dtype);
      return { kind, dtype, op: ops[opIndex % ops.length]!, root, count, tagged, nullRanks };
    });
}

function messageShapeArb(worldSize: number, rails: number): fc.Arbitrary<MessageShape> {
  return fc.record({
    source: fc.integer({ min: 0, max: worldSize - 1 }),
    destination: fc.integer({ min: 0, max: worldSize - 1 }),
    tag: fc.constantFrom(...TAGS),
    tagAsNumber: fc.boolean(),
    rail: fc.option(fc.integer({ min: 0, max: rails - 1 }), { nil: undefined }),
    dtype: dtypeArb,
    count: fc.integer({ min: 0, max: 4 }),
    tagged: fc.boolean(),
    anySource: fc.boolean(),
  });
}

/**
 * ANY source only where every message of the program with the same (destination, tag, rail) has
 * one source (steps overlap, see above).
 */
function disambiguate(steps: readonly (readonly MessageShape[])[], rails: number): MessageShape[][] {
  const key = (m: MessageShape) => `${m.destination}/${m.tag}/${railOf(m, rails)}`;
  const sources = new Map<string, Set<number>>();
  for (const m of steps.flat()) {
    const set = sources.get(key(m)) ?? new Set<number>();
    set.add(m.source);
    sources.set(key(m), set);
  }
  return steps.map((messages) => messages.map((m) => (m.anySource && sources.get(key(m))!.size > 1 ? { ...m, anySource: false } : m)));
}

const programArb: fc.Arbitrary<Program> = fc
  .record({ worldSize: fc.integer({ min: 1, max: 4 }), rails: fc.integer({ min: 1, max: 3 }) })
  .chain(({ worldSize, rails }) =>
    fc.record({
      transport: fc.constantFrom<CollectiveTransport>('tcp_host_staged', 'tcp_peer'),
      worldSize: fc.constant(worldSize),
      rails: fc.constant(rails),
      seed: fc.integer(),
      steps: fc.array(
        fc.record({
          messages: fc.array(messageShapeArb(worldSize, rails), { maxLength: 8 }),
          collective: fc.option(collectiveShapeArb(worldSize), { nil: null }),
        }),
        { minLength: 1, maxLength: 6 },
      ),
    }),
  )
  .map(({ transport, worldSize, rails, seed, steps }) => {
    const random = seededRandom(seed);
    const messages = disambiguate(
      steps.map((step) => step.messages),
      rails,
    );
    return {
      transport,
      worldSize,
      rails,
      steps: steps.map((step, index) => ({
        messages: messages[index]!.map((m) => ({ ...m, bytes: randomBytes(m.dtype, m.count, random) })),
        collective: step.collective === null ? null : buildCase(step.collective, worldSize, random),
      })),
    };
  });

function describeProgram(program: Program): string {
  const lines = [`${program.transport}, world ${program.worldSize}, rails ${program.rails}`];
  program.steps.forEach((step, index) => {
    const messages = step.messages.map(
      (m) => `${m.source}->${m.destination} tag ${m.tag} rail ${m.rail ?? 'default'} ${m.dtype}x${m.count}${m.anySource ? ' ANY' : ''}`,
    );
    lines.push(`step ${index}: ${step.collective ? describeCase(step.collective) : 'no collective'}; [${messages.join('; ')}]`);
  });
  return lines.join('\n');
}

// ---- the point-to-point model ---------------------------------------------------------------

/**
 * What every receive of the program must deliver, as [step][rank][receive in posting order]: each
 * rank's receives, in program order, take the oldest unmatched send of the program (in program
 * order) on their rail, from a matching source, to their rank, with their tag (FIFO per match
 * key, as the coordinator and the peer mesh match).
 */
function modelMessages(program: Program): Outcome[][][] {
  const all = program.steps.flatMap((step, stepIndex) => step.messages.map((message) => ({ message, stepIndex })));
  const matched = new Array<boolean>(all.length).fill(false);
  const expected = program.steps.map(() => Array.from({ length: program.worldSize }, (): Outcome[] => []));
  for (let rank = 0; rank < program.worldSize; rank++) {
    for (const { message: receive, stepIndex } of all.filter(({ message }) => message.destination === rank)) {
      const index = all.findIndex(
        ({ message: send }, sendIndex) =>
          !matched[sendIndex] &&
          send.destination === rank &&
          send.tag === receive.tag &&
          railOf(send, program.rails) === railOf(receive, program.rails) &&
          (receive.anySource || send.source === receive.source),
      );
      if (index < 0) throw new Error('model: a receive has no matching send (generator bug)');
      matched[index] = true;
      const send = all[index]!.message;
      expected[stepIndex]![rank]!.push({ bytes: send.bytes, dtype: send.dtype, className: arrayClassOf(send.dtype).name, tagged: isHalf(send.dtype) });
    }
  }
  return expected;
}

// ---- running ----------------------------------------------------------------------------------

interface StepTrace {
  readonly receives: Outcome[];
  readonly collective: Outcome | null;
}

function tagArgument(m: MessageShape): number | bigint {
  return m.tagAsNumber && m.tag <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(m.tag) : m.tag;
}

async function runRank(session: RankSession, program: Program): Promise<StepTrace[]> {
  const trace: StepTrace[] = [];
  for (const step of program.steps) {
    const options = (m: MessageShape) => (m.rail === undefined ? {} : { rail: m.rail });
    const sends = step.messages
      .filter((m) => m.source === session.rank)
      .map((m) => session.send(m.destination, tagArgument(m), tensorOf(m.dtype, m.bytes, m.tagged), options(m)));
    const receives = step.messages
      .filter((m) => m.destination === session.rank)
      .map((m) =>
        session.receive(m.anySource ? null : m.source, tagArgument(m), { dtype: m.dtype, count: m.count }, options(m)).then(outcomeOf),
      );
    const collective = step.collective === null ? Promise.resolve(null) : runCollective(session, step.collective);
    const [, received, outcome] = await Promise.all([Promise.all(sends), Promise.all(receives), collective]);
    trace.push({ receives: received, collective: outcome });
  }
  return trace;
}

function expectOutcome(got: Outcome | undefined, want: Outcome, what: string): void {
  expect(got, what).toBeDefined();
  expect(got!.bytes === null, `${what}: null result`).toBe(want.bytes === null);
  if (want.bytes !== null) {
    expect({ dtype: got!.dtype, className: got!.className, tagged: got!.tagged }, `${what}: form`).toEqual({
      dtype: want.dtype,
      className: want.className,
      tagged: want.tagged,
    });
    expect(Buffer.from(got!.bytes!).equals(Buffer.from(want.bytes)), `${what}: bytes`).toBe(true);
  }
  if (want.counts !== undefined) expect(got!.counts, `${what}: counts`).toEqual(want.counts);
}

describe('model: random programs of collectives and point-to-point messages', () => {
  it('every rank observes what the model predicts, and the job ends cleanly', async () => {
    await fc.assert(
      fc.asyncProperty(programArb, async (program) => {
        const job = await startJob(program.worldSize, { transport: program.transport, rails: program.rails, timeoutMs: 5_000 });
        jobs.push(job);
        const traces = await Promise.all(job.sessions.map((session) => runRank(session, program))).catch((error: unknown) => {
          throw new Error(`program failed: ${String(error)}\n${describeProgram(program)}`);
        });
        const messages = modelMessages(program);
        program.steps.forEach((step, index) => {
          const receives = messages[index]!;
          const collective = step.collective === null ? null : modelCollective(step.collective, program.worldSize);
          for (let rank = 0; rank < program.worldSize; rank++) {
            const trace = traces[rank]![index]!;
            expect(trace.receives.length, `step ${index} rank ${rank}: receives`).toBe(receives[rank]!.length);
            receives[rank]!.forEach((want, receive) => expectOutcome(trace.receives[receive], want, `step ${index} rank ${rank} receive ${receive}`));
            if (collective !== null) expectOutcome(trace.collective ?? undefined, collective[rank]!, `step ${index} rank ${rank} ${describeCase(step.collective!)}`);
          }
        });
        await Promise.all(job.sessions.map((session) => session.close()));
        await expect(job.coordinator.done).resolves.toBeUndefined();
        await job.dispose();
        jobs.splice(jobs.indexOf(job), 1);
      }),
      { numRuns: 150, endOnFailure: true },
    );
  }, 60_000);
});

// ---- disagreement ---------------------------------------------------------------------------------

type Deviation = 'kind' | 'count' | 'dtype' | 'op' | 'root';

/** The deviations that change what the coordinator's agreement compares for this collective. */
function deviationsFor(c: CaseShape, worldSize: number): Deviation[] {
  const out: Deviation[] = ['kind'];
  if (c.kind !== 'barrier') out.push('dtype');
  if (c.kind !== 'barrier' && c.kind !== 'allToAllV' && c.kind !== 'scatter') out.push('count');
  if (REDUCING_KINDS.includes(c.kind)) out.push('op');
  if (worldSize > 1 && (c.kind === 'broadcast' || c.kind === 'gather' || c.kind === 'reduce')) out.push('root');
  return out;
}

function deviate(c: CaseShape, deviation: Deviation, worldSize: number): CaseShape {
  switch (deviation) {
    case 'kind': {
      const kinds = COLLECTIVE_KINDS.filter((kind) => kind !== c.kind && kind !== 'scatter');
      return { ...c, kind: kinds[(COLLECTIVE_KINDS.indexOf(c.kind) + 1) % kinds.length] as CollectiveKind };
    }
    case 'count':
      return { ...c, count: c.count + 1 };
    case 'dtype': {
      const dtype = DTYPES[(DTYPES.indexOf(c.dtype) + 1) % DTYPES.length]!;
      const ops = opsFor(dtype);
      return { ...c, dtype, op: ops.includes(c.op ?? 'sum') ? c.op : 'sum' };
    }
    case 'op': {
      const ops = opsFor(c.dtype);
      return { ...c, op: ops[(ops.indexOf(c.op ?? 'sum') + 1) % ops.length]! };
    }
    case 'root':
      return { ...c, root: ((c.root ?? 0) + 1) % worldSize };
  }
}

describe('model: a rank that disagrees on a collective', () => {
  it('aborts every rank at that sequence with the mismatch, after the earlier collectives succeeded', async () => {
    const arb = fc.integer({ min: 2, max: 4 }).chain((worldSize) =>
      fc.record({
        worldSize: fc.constant(worldSize),
        seed: fc.integer(),
        before: fc.array(collectiveShapeArb(worldSize), { maxLength: 3 }),
        target: collectiveShapeArb(worldSize),
        deviant: fc.integer({ min: 0, max: worldSize - 1 }),
        pick: fc.nat(),
      }),
    );
    await fc.assert(
      fc.asyncProperty(arb, async ({ worldSize, seed, before, target, deviant, pick }) => {
        const random = seededRandom(seed);
        const deviations = deviationsFor(target, worldSize);
        const deviation = deviations[pick % deviations.length]!;
        const agreed = before.map((shape) => buildCase(shape, worldSize, random));
        // Scatter: every rank passes data here, so its count travels (a null rank's could not).
        const plain = { ...target, nullRanks: [] as number[] };
        const honest = buildCase(plain, worldSize, random);
        const odd = buildCase(deviate(plain, deviation, worldSize), worldSize, random);
        const job = await startJob(worldSize, { timeoutMs: 10_000 });
        jobs.push(job);
        const sequence = agreed.length;
        const results = await Promise.all(
          job.sessions.map(async (session) => {
            const outcomes: Outcome[] = [];
            for (const c of agreed) outcomes.push(await runCollective(session, c));
            const mine = session.rank === deviant ? odd : honest;
            return { outcomes, error: await rejection(runCollective(session, mine)) };
          }),
        );
        agreed.forEach((c, index) => {
          const model = modelCollective(c, worldSize);
          results.forEach((result, rank) => expectOutcome(result.outcomes[index], model[rank]!, `agreed ${describeCase(c)} rank ${rank}`));
        });
        const what = `${deviation} deviation of rank ${deviant} in ${describeCase(honest)} at sequence ${sequence}`;
        for (const { error } of results) {
          expect(error.code, what).toBe('REMOTE_ABORT');
          expect(error.message, what).toContain(`collective sequence ${sequence} mismatch`);
        }
        await expect(job.coordinator.done).rejects.toThrow(`collective sequence ${sequence} mismatch`);
        await job.dispose();
        jobs.splice(jobs.indexOf(job), 1);
      }),
      { numRuns: 60 },
    );
  }, 60_000);
});

describe('model: point-to-point contract mismatch', () => {
  it('a receive whose shape differs from the matching send aborts both ranks, naming tag and ranks', async () => {
    const job = await startJob(2, { timeoutMs: 10_000 });
    jobs.push(job);
    const [zero, one] = job.sessions as [RankSession, RankSession];
    const [sent, received] = await Promise.allSettled([zero.send(1, 9, Int32Array.of(1, 2)), one.receive(0, 9, { dtype: 'f32', count: 2 })]);
    // The send may have been acknowledged (buffered) before the receive arrived; the receive never completes.
    const errors = [received, sent].flatMap((result) => (result.status === 'rejected' ? [result.reason as Error & { code?: string }] : []));
    expect(received.status).toBe('rejected');
    for (const error of errors) {
      expect(error.code).toBe('REMOTE_ABORT');
      expect(error.message).toMatch(/point-to-point tag 9 contract mismatch: send I32\/2 receive F32\/2 \(rank 0 -> rank 1\)/);
    }
    // Every rank's session has failed with it, whether or not a call was pending.
    for (const session of [zero, one]) {
      const failure = await new Promise<unknown>((resolve) => session.failure$.subscribe({ error: resolve, complete: () => resolve(null) }));
      expect(String(failure)).toMatch(/contract mismatch/);
    }
    await expect(job.coordinator.done).rejects.toThrow(/contract mismatch/);
  });
});
