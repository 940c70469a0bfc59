/**
 * Collectives as RxJS operators: a stream of tensors flows through allReduce(session) and
 * ordinary operators, a heartbeat$ stream runs alongside it, and an error on any rank aborts the
 * session everywhere (session.abort), so no rank waits for a collective that will never come.
 *
 *   rxccl launch -n 4 -- tsx examples/pipeline.ts
 *   rxccl launch -n 4 -- tsx examples/pipeline.ts --fail-rank 2   # rank 2 fails at step 3
 */
import { lastValueFrom, map, range, scan, Subject, takeUntil, tap, toArray } from 'rxjs';
import { allReduce, heartbeat$, openSession } from '../lib/index.js';

const STEPS = 12;
const WIDTH = 8;
const FAIL_AT_STEP = 3;
const failFlag = process.argv.indexOf('--fail-rank');
const failRank = failFlag < 0 ? null : Number(process.argv[failFlag + 1]);

const session = await openSession();
const { rank, worldSize } = session;

// The heartbeat proves the coordinator still hears this rank; it stops with the pipeline.
const stop$ = new Subject<void>();
const roundTrips: number[] = [];
heartbeat$(session, 50, 2_000)
  .pipe(takeUntil(stop$))
  .subscribe({ next: (ms) => roundTrips.push(ms), error: () => undefined /* the pipeline reports the session's failure */ });

// Step s: rank r contributes [r + s, r + s + 1, ...]; the sum over ranks is N(N-1)/2 + N(s + i).
const expected = (step: number, index: number) => (worldSize * (worldSize - 1)) / 2 + worldSize * (step + index);

const pipeline$ = range(0, STEPS).pipe(
  tap((step) => {
    if (rank === failRank && step === FAIL_AT_STEP) throw new Error(`injected failure at step ${step}`);
  }),
  map((step) => Float32Array.from({ length: WIDTH }, (_, index) => rank + step + index)),
  allReduce(session, 'sum'),
  map((sum, step) => ({ step, sum, ok: sum.every((value, index) => value === expected(step, index)) })),
  tap(({ step, sum }) => {
    if (rank === 0 && step % 4 === 0) console.log(`step ${step}: sum [${sum.slice(0, 4).join(', ')}, ...]`);
  }),
  scan((total, { ok }) => ({ steps: total.steps + 1, mismatches: total.mismatches + (ok ? 0 : 1) }), { steps: 0, mismatches: 0 }),
  toArray(),
  map((totals) => totals.at(-1) ?? { steps: 0, mismatches: 0 }),
);

try {
  const { steps, mismatches } = await lastValueFrom(pipeline$);
  const median = [...roundTrips].sort((a, b) => a - b)[roundTrips.length >> 1] ?? NaN;
  console.log(`rank ${rank}: ${steps} steps reduced, ${mismatches} mismatches, ${roundTrips.length} heartbeats (median ${median.toFixed(2)} ms)`);
  if (mismatches > 0) process.exitCode = 1;
} catch (error) {
  // This rank's own failure is announced to every rank; one that was aborted just reports it.
  const message = error instanceof Error ? error.message : String(error);
  if (session.error === undefined) await session.abort(message).catch(() => undefined);
  console.error(`rank ${rank} stopped: ${message}`);
  process.exitCode = 1;
} finally {
  stop$.next();
  await session.close();
}
