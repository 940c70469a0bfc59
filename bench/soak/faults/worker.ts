/**
 * A rank process of the soak, forked by run.ts; it outlives the jobs it takes part in. Each epoch
 * it opens a session of that epoch's job and runs the mix (workload.ts) until the session fails,
 * which it does when the driver kills a rank of the job (communicators do not shrink: a lost rank
 * ends the job). It then closes the session and reports its counts, the session's error with the
 * time it came, and what the process holds, so a leak shows across the epochs it survives.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { openSession } from '../../../lib/launch/open-session.js';
import type { RankSession } from '../../../lib/session/rank-session.js';
import { wallClockMs } from './clock.js';
import type { EpochOrder, FromRank, SessionError, Tally } from './messages.js';
import { planeOptions } from './planes.js';
import { sampleResources } from './resources.js';
import { runIteration } from './workload.js';

/**
 * How long a session may wait for a response or a peer. A survivor is meant to see a lost rank
 * through the connections it loses, within milliseconds; this bounds the wait where it would not
 * (the error is then a timeout, and late: the driver reports both).
 */
const SESSION_TIMEOUT_MS = 30_000;

/** Time for the sockets a closed session ended to be released before the descriptors are counted. */
const SETTLE_MS = 250;

const tell = (message: FromRank) => process.send!(message);

const errorOf = (error: unknown): SessionError => ({ atMs: wallClockMs(), message: error instanceof Error ? error.message : String(error) });

async function work(session: RankSession, order: EpochOrder, tally: Tally): Promise<SessionError> {
  // The session's failure comes first where a lost peer fails it before the operation in flight notices.
  let failed: SessionError | null = null;
  session.failure$.subscribe({ error: (error: unknown) => (failed ??= errorOf(error)) });
  const progress = setInterval(() => tell({ kind: 'progress', epoch: order.epoch, tally }), 1_000);
  try {
    for (let iteration = 0; ; iteration++) await runIteration(session, order.epoch, iteration, tally);
  } catch (error) {
    return failed ?? errorOf(error);
  } finally {
    clearInterval(progress);
  }
}

async function runEpoch(order: EpochOrder): Promise<void> {
  const tally: Tally = { ops: 0, wrong: 0, wrongExamples: [] };
  let error: SessionError;
  try {
    const { coordinator, uniqueId, rank, worldSize, secret } = order;
    const session = await openSession({ coordinator, uniqueId, rank, worldSize, secret, timeoutMs: SESSION_TIMEOUT_MS, ...planeOptions(order.plane) });
    tell({ kind: 'joined', epoch: order.epoch });
    error = await work(session, order, tally);
    await session.close();
  } catch (failure) {
    error = errorOf(failure);
  }
  await delay(SETTLE_MS);
  tell({ kind: 'report', epoch: order.epoch, tally, error, resources: sampleResources() });
}

process.on('message', (order: EpochOrder) => void runEpoch(order));
tell({ kind: 'hello', resources: sampleResources() });
