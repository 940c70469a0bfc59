import { Coordinator, type CoordinatorOptions } from '../../lib/coordinator/coordinator.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { RankSession } from '../../lib/session/rank-session.js';
import { resolveSessionOptions, type SessionOptions } from '../../lib/session/session-options.js';

/** Session options a test may set per rank (the job decides address, id, rank, world and transport). */
export type RankOverrides = Partial<Omit<SessionOptions, 'coordinator' | 'uniqueId' | 'rank' | 'worldSize' | 'transport'>>;

export type JobOptions = Omit<CoordinatorOptions, 'uniqueId' | 'worldSize'> & { uniqueId?: UniqueId; timeoutMs?: number };

/** A coordinator on loopback plus a way to open its ranks in this process. */
export interface TestJob {
  readonly coordinator: Coordinator;
  readonly uniqueId: UniqueId;
  readonly worldSize: number;
  openRank(rank: number, overrides?: RankOverrides): Promise<RankSession>;
  /** Closes every session opened through this job and the coordinator. */
  dispose(): Promise<void>;
}

export async function startCoordinator(worldSize: number, options: JobOptions = {}): Promise<TestJob> {
  const uniqueId = options.uniqueId ?? UniqueId.random();
  // The reference design's transport unless a test names one (the library's default is tcp_peer).
  const transport = options.transport ?? 'tcp_host_staged';
  const coordinator = await Coordinator.listen({ ...options, host: '127.0.0.1', port: 0, uniqueId, worldSize, transport }, {});
  const sessions: RankSession[] = [];
  return {
    coordinator,
    uniqueId,
    worldSize,
    async openRank(rank, overrides = {}) {
      const session = await RankSession.open(
        // An empty environment: tests say what they configure.
        resolveSessionOptions(
          {
            ...overrides,
            coordinator: `127.0.0.1:${coordinator.address.port}`,
            uniqueId,
            rank,
            worldSize,
            timeoutMs: overrides.timeoutMs ?? options.timeoutMs ?? 5_000,
            rails: overrides.rails ?? options.rails ?? 1,
            transport,
          },
          {},
        ),
      );
      sessions.push(session);
      return session;
    },
    async dispose() {
      await Promise.all(sessions.map((session) => session.close()));
      await coordinator.close();
    },
  };
}

/** Opens every rank of a job concurrently (each rank's rendezvous waits for the others). */
export async function startJob(worldSize: number, options: JobOptions = {}): Promise<TestJob & { sessions: RankSession[] }> {
  const job = await startCoordinator(worldSize, options);
  const sessions = await Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank)));
  return { ...job, sessions };
}

/** Opens every rank of `job`, each with `overrides(rank)`, expecting every one to fail: the errors, by rank. */
export async function openRejections(job: TestJob, overrides: (rank: number) => RankOverrides): Promise<(Error & { code?: string })[]> {
  return Promise.all(Array.from({ length: job.worldSize }, (_, rank) => rejection(job.openRank(rank, overrides(rank)))));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves with the rejection of `promise` (fails if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a rejection, got a value');
}

/**
 * The reference design's explicit_rank_abort_interrupts_collective_without_closing_its_session,
 * for one transport: rank 1 aborts (over its P2P channels, its session still open) while rank 0
 * waits in a barrier; rank 0 wakes within 1 s with the reason, and the coordinator fails with it.
 */
export async function expectAbortInterruptsCollective(job: TestJob): Promise<void> {
  const [waiting, aborting] = await Promise.all([job.openRank(0), job.openRank(1)]);
  const pending = rejection(waiting.barrier());
  await sleep(20);
  const started = Date.now();
  await aborting.abort('collective failure reason');
  const error = await pending;
  if (error.code !== 'REMOTE_ABORT' || !error.message.includes('collective failure reason')) {
    throw new Error(`unexpected collective abort: ${error.code}: ${error.message}`);
  }
  if (Date.now() - started >= 1_000) throw new Error(`the abort took ${Date.now() - started} ms to wake the collective`);
  await job.coordinator.done.then(
    () => {
      throw new Error('the coordinator did not fail');
    },
    (failure: Error) => {
      if (!failure.message.includes('collective failure reason')) throw failure;
    },
  );
}
