/**
 * One rank of the collectives bench, run as its own process by bench/collectives/run.ts with the
 * GX1_* environment and the plan in BENCH_PLAN. First the process warms up: rounds of one call
 * of each collective of the plan at its smallest size, for at least `processWarmupMs` and
 * `processWarmupCalls` calls (see Budget).
 * Then for each cell, nccl-tests style, in each of its forms (out-of-place, then in-place where the
 * collective has that form and the plan asks for it, see `callFor`):
 *
 * 1. one timed probe call (also the first warm-up call); every rank takes the max over ranks
 *    (allReduce max, outside any timed region) as the estimate of one call;
 * 2. warm-up calls for about `warmupMs` (at least one more unless a call takes longer than
 *    `cellMs`), timed together to re-estimate one call; iterations per sample for about
 *    `sampleMs`;
 * 3. samples: barrier, then `iterations` back-to-back calls, timed; the sample is the max over
 *    ranks of the per-call average; samples go on until `maxSamples`, or past `minSamples` once
 *    they took `cellMs`, or past the first once they took `maxCellMs` (very slow cells);
 * 4. one more call whose result every rank checks (data-check.ts), the wrong elements summed.
 *
 * `warmupIterations` and `iterations` in the budget (`rxccl bench -w N --iters N`) fix the counts
 * of steps 2 and 3 instead.
 *
 * Every count and stop decision derives from values all ranks agree on (reduced with max), so all
 * ranks run the same collectives. Rank 0 prints one `ROW <json>` line per cell: the out-of-place
 * measurement, and the in-place one under `inPlace`.
 */
import { performance } from 'node:perf_hooks';
import { kernelBackend } from '../../lib/kernels/index.js';
import { openSession } from '../../lib/launch/open-session.js';
import { formatTopologyLinks } from '../../lib/topology/ring-tuning.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { dtypeWidth, emptyLike, isTaggedTensor, type Tensor, viewTensor } from '../../lib/tensor.js';
import { countWrong, inputTensor } from './data-check.js';
import { type Budget, busFactor, callsPerSample, type Cell, COLLECTIVE_OF_OP, FORMS, type Form, processWarmupCells, type Timing, WARMUP_ROUNDS_PER_LOOK, warmupCalls, type WorkerPlan } from './plan.js';
import { median } from '../../lib/diagnostics/median.js';

const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * A cell's call in one of nccl-tests' two forms, or null where the collective has no in-place
 * form (reduce, all-to-all, barrier). Results go into memory allocated once, as the peers' benches
 * do (MPI's buffers, torch.distributed's preallocated all_gather outputs): a fresh 64 MiB result
 * costs ~40 ms of first-touch page faults here, which would measure the allocator.
 *
 * - out-of-place: the result in an output of its own (`{ output }`; reduce's at the root: it has
 *   no output option);
 * - in-place: the result in the input (`{ inPlace: true }`), or as NCCL's in-place forms: the
 *   all-gather's input this rank's slot of its output, the reduce-scatter's output this rank's
 *   slot of its input.
 */
function callFor(session: RankSession, cell: Cell, form: Form): (() => Promise<unknown>) | null {
  const input = inputTensor(cell, session.rank);
  const like = viewTensor(input);
  const slot = (whole: Tensor, index: number, count: number) => part(whole, index * count, count);
  if (form === 'in-place') {
    switch (cell.op) {
      case 'allreduce':
        return () => session.allReduce(input, 'sum', { inPlace: true });
      case 'broadcast':
        return () => session.broadcast(input, 0, { inPlace: true });
      case 'allgather': {
        const output = emptyLike(like, cell.inputCount * session.worldSize);
        const own = slot(output, session.rank, cell.inputCount);
        viewTensor(own).bytes.set(like.bytes);
        return () => session.allGather(own, { output });
      }
      case 'reducescatter': {
        const own = slot(input, session.rank, cell.inputCount / session.worldSize);
        return () => session.reduceScatter(input, 'sum', { output: own });
      }
      default:
        return null;
    }
  }
  switch (cell.op) {
    case 'allreduce': {
      const output = emptyLike(like, cell.inputCount);
      return () => session.allReduce(input, 'sum', { output });
    }
    case 'broadcast': {
      const output = emptyLike(like, cell.inputCount);
      return () => session.broadcast(input, 0, { output });
    }
    case 'reduce':
      return () => session.reduce(input, 'sum', 0);
    case 'allgather': {
      const output = emptyLike(like, cell.inputCount * session.worldSize);
      return () => session.allGather(input, { output });
    }
    case 'reducescatter': {
      const output = emptyLike(like, cell.inputCount / session.worldSize);
      return () => session.reduceScatter(input, 'sum', { output });
    }
    case 'alltoall': {
      const output = emptyLike(like, cell.inputCount);
      return () => session.allToAll(input, { output });
    }
    case 'barrier':
      return () => session.barrier();
  }
}

/** `count` elements of `tensor` from `start`, sharing its memory, in its form. */
function part(tensor: Tensor, start: number, count: number): Tensor {
  return isTaggedTensor(tensor) ? { dtype: tensor.dtype, data: tensor.data.subarray(start, start + count) } : tensor.subarray(start, start + count);
}

async function maxOverRanks(session: RankSession, value: number): Promise<number> {
  const reduced = await session.allReduce(Float64Array.of(value), 'max');
  return reduced[0]!;
}


async function measure(session: RankSession, cell: Cell, budget: Budget, call: () => Promise<unknown>, check: () => Promise<unknown>) {
  // The first call is the probe: its time (max over ranks) sizes warm-up and samples.
  await session.barrier();
  const probeStart = performance.now();
  await call();
  let estimate = Math.max(1e-3, await maxOverRanks(session, performance.now() - probeStart));
  const warmup = warmupCalls(budget, estimate);
  if (warmup > 0) {
    // The first call carries one-off costs (JIT, first allocations): re-estimate from the
    // back-to-back warm-up calls.
    await session.barrier();
    const warmupStart = performance.now();
    for (let index = 0; index < warmup; index++) await call();
    estimate = Math.max(1e-3, await maxOverRanks(session, (performance.now() - warmupStart) / warmup));
  }
  const iterations = callsPerSample(budget, estimate, cell.bytes);
  const samples: number[] = [];
  let spentMs = 0;
  while (samples.length < budget.maxSamples) {
    await session.barrier();
    const start = performance.now();
    for (let index = 0; index < iterations; index++) await call();
    const perCall = (performance.now() - start) / iterations;
    const sample = await maxOverRanks(session, perCall);
    samples.push(sample);
    spentMs += sample * iterations;
    if (samples.length >= budget.minSamples && spentMs >= budget.cellMs) break;
    if (spentMs >= budget.maxCellMs) break;
  }
  // The data check, outside any timed region: one more call, its result against the expected one.
  // A fresh input: the timed calls may have reduced theirs in place.
  const wrong = countWrong(cell, await check(), session.rank, session.worldSize);
  const totalWrong = (await session.allReduce(Float64Array.of(wrong), 'sum'))[0]!;
  return { samples, iterations, warmup: warmup + 1, wrong: totalWrong };
}

/**
 * Process warm-up (JIT, kernel thread pool, socket buffers) before the first cell is timed: rounds
 * of one small call of each collective of the plan, until they took about `processWarmupMs` (the
 * max over ranks) and made `processWarmupCalls` calls, looked at every `WARMUP_ROUNDS_PER_LOOK`
 * rounds. What it shows of a cold process, the first look's time a call against the last's, rank
 * 0 reports in a `WARMUP` line (the table's "# warm-up:").
 */
async function warmUpProcess(session: RankSession, plan: WorkerPlan): Promise<void> {
  const calls = processWarmupCells(plan.cells, session.worldSize).map((cell) => callFor(session, cell, 'out-of-place')!);
  const callsPerLook = WARMUP_ROUNDS_PER_LOOK * calls.length;
  await session.barrier();
  const start = performance.now();
  const looks: number[] = [];
  for (let round = 1; ; round++) {
    for (const call of calls) await call();
    if (round % WARMUP_ROUNDS_PER_LOOK !== 0) continue;
    looks.push(await maxOverRanks(session, performance.now() - start));
    if (looks.at(-1)! >= plan.budget.processWarmupMs && round * calls.length >= plan.budget.processWarmupCalls) break;
  }
  if (session.rank === 0) {
    const lastUs = ((looks.at(-1)! - (looks.at(-2) ?? 0)) / callsPerLook) * 1e3;
    say(`WARMUP ${JSON.stringify({ worldSize: session.worldSize, calls: looks.length * callsPerLook, seconds: looks.at(-1)! / 1e3, firstUs: (looks[0]! / callsPerLook) * 1e3, lastUs })}`);
  }
}

/** One form's measurement as a row reports it: the median over samples, its min-max, and the bandwidths of the median. */
function timing(cell: Cell, worldSize: number, { samples, iterations, warmup, wrong }: { samples: number[]; iterations: number; warmup: number; wrong: number }): Timing {
  const timeMs = median(samples);
  const algbw = cell.bytes === 0 ? 0 : cell.bytes / (timeMs / 1e3) / 1e9;
  return {
    timeUs: timeMs * 1e3,
    minUs: Math.min(...samples) * 1e3,
    maxUs: Math.max(...samples) * 1e3,
    algbw,
    busbw: algbw * busFactor(cell.op, worldSize),
    samples: samples.length,
    iterations,
    warmup,
    wrong,
  };
}

/** What a cell runs, as `session.plan` names it (planned at each rank's input size). */
function algorithmOf(session: RankSession, cell: Cell): string {
  const { algorithm, plane } = session.plan(COLLECTIVE_OF_OP[cell.op], cell.inputCount * dtypeWidth(cell.dtype));
  return `${algorithm} on ${plane}`;
}

async function main(): Promise<number> {
  const plan = JSON.parse(process.env.BENCH_PLAN ?? 'null') as WorkerPlan | null;
  if (plan === null) throw new Error('BENCH_PLAN is not set: run bench/collectives/run.ts');
  const session = await openSession();
  if (session.rank === 0) {
    const groups = session.topologyGroups?.map((group) => group.join(',')).join(';') ?? null;
    const topologyLinks = session.topology === null ? null : formatTopologyLinks(session.topology);
    const meta = { kernels: kernelBackend(), transport: session.transport, node: process.version, ...(groups === null ? {} : { groups }), topologyLinks, fingerprints: session.autotuneFingerprints };
    say(`META ${JSON.stringify(meta)}`);
  }
  await warmUpProcess(session, plan);
  for (const cell of plan.cells) {
    const measured = [];
    for (const form of plan.inPlace ? FORMS : FORMS.slice(0, 1)) {
      const call = callFor(session, cell, form);
      if (call !== null) measured.push(timing(cell, session.worldSize, await measure(session, cell, plan.budget, call, () => callFor(session, cell, form)!())));
    }
    const [outOfPlace, inPlace] = measured;
    if (session.rank === 0) {
      say(
        `ROW ${JSON.stringify({
          op: cell.op,
          worldSize: session.worldSize,
          transport: session.transport,
          dtype: cell.dtype,
          bytes: cell.bytes,
          count: cell.count,
          ...outOfPlace,
          ...(inPlace === undefined ? {} : { inPlace }),
          algorithm: algorithmOf(session, cell),
        })}`,
      );
    }
  }
  await session.close();
  say('DONE');
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const e = error as Error & { code?: string };
    say(`ERROR ${e.code ?? e.name} ${e.message}`);
    process.exit(3);
  },
);
