/**
 * One epoch of the soak: a fresh job on one plane, every rank process in it, a rank killed after
 * `killAfterMs`, and what each survivor then saw. The driver hosts the job's coordinator, as
 * `rxccl launch` does.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Coordinator } from '../../../lib/coordinator/coordinator.js';
import { coordinatorBusyWindow } from '../../../lib/launch/coordinator-busy-window.js';
import { UniqueId } from '../../../lib/protocol/unique-id.js';
import { generateSecret } from '../../../lib/transport/job-secret.js';
import { wallClockMs } from './clock.js';
import type { SessionError, Tally } from './messages.js';
import { namesRank } from './names-rank.js';
import { type Plane, transportOf } from './planes.js';
import type { RankProcess } from './rank-process.js';
import type { Resources } from './resources.js';

/** Joining takes a second or two; far longer means a rank cannot join, and the run stops. */
const JOIN_MS = 60_000;

/**
 * How long after the kill a survivor may take to report. Its session times out after 30 s
 * (worker.ts), so a survivor that has not reported after this is stuck past its own timeout.
 */
export const REPORT_MS = 45_000;

/** How often the wait before the kill looks for a rank that failed or exited early. */
const LOOK_MS = 200;

export interface SurvivorResult {
  readonly slot: number;
  readonly rank: number;
  readonly tally: Tally;
  /** Its session's error, or null where it did not report within REPORT_MS (it was killed then). */
  readonly error: SessionError | null;
  /** From the kill to the error (negative: the session failed before the kill). */
  readonly errorAfterMs: number | null;
  readonly namesKilledRank: boolean;
  /** What its process held after closing the session. */
  readonly resources: Resources | null;
}

export interface EpochResult {
  readonly epoch: number;
  readonly plane: Plane;
  readonly killedRank: number;
  /** From the moment every rank joined to the kill. */
  readonly ranMs: number;
  /** The killed rank's counts as it last sent them (it sends them every second). */
  readonly killedTally: Tally | null;
  readonly survivors: readonly SurvivorResult[];
  /** The coordinator's failure, or null if it did not fail. */
  readonly coordinatorError: string | null;
  readonly coordinatorNamesKilledRank: boolean;
  /** Slots whose process must be replaced: the killed one, and any that hung or exited. */
  readonly lost: readonly number[];
}

/**
 * Runs epoch `epoch` with `ranks[slot]` as the processes; the last slot's process is the one
 * killed, as rank `killedRank`. Throws where a job cannot be set up (nothing to soak then).
 */
export async function runEpoch(epoch: number, plane: Plane, ranks: readonly RankProcess[], killedRank: number, killAfterMs: number): Promise<EpochResult> {
  const worldSize = ranks.length;
  const victim = ranks[worldSize - 1]!;
  // The other slots take the other ranks in order, so the rank killed goes round while the
  // survivors' processes live through the whole run.
  const rankOf = (slot: number) => (slot === worldSize - 1 ? killedRank : slot < killedRank ? slot : slot + 1);
  const uniqueId = UniqueId.random();
  const secret = generateSecret();
  const transport = transportOf(plane);
  const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize, transport, secret, busyWindow: coordinatorBusyWindow(process.env) });
  const coordinatorError = coordinator.done.then(
    () => null,
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  );
  try {
    const address = `127.0.0.1:${coordinator.address.port}`;
    ranks.forEach((rank, slot) =>
      rank.order({ kind: 'epoch', epoch, plane, coordinator: address, uniqueId: uniqueId.toHex(), secret, rank: rankOf(slot), worldSize }),
    );
    for (const [slot, rank] of ranks.entries()) {
      const joined = await rank.next(JOIN_MS);
      if (typeof joined === 'string' || joined.kind !== 'joined') {
        const why = typeof joined === 'string' ? joined : joined.kind === 'report' ? joined.error.message : joined.kind;
        throw new Error(`epoch ${epoch} (${plane}): rank ${rankOf(slot)} (slot ${slot}) could not join: ${why}`);
      }
    }
    const joinedAt = Date.now();
    // A rank that fails or exits before its time ends the wait: the job is over already.
    while (Date.now() - joinedAt < killAfterMs && ranks.every((rank) => rank.running && !rank.hasNews)) {
      await delay(Math.min(LOOK_MS, killAfterMs - (Date.now() - joinedAt)));
    }
    const killedAtMs = wallClockMs();
    const ranMs = Date.now() - joinedAt;
    await victim.kill();
    const deadline = Date.now() + REPORT_MS;
    const survivors: SurvivorResult[] = [];
    for (const [slot, rank] of ranks.slice(0, -1).entries()) {
      const report = await rank.next(deadline - Date.now());
      if (typeof report === 'string' || report.kind !== 'report') {
        // Stuck (or gone): what it counted is its last progress; it is replaced.
        if (rank.running) await rank.kill();
        survivors.push({ slot, rank: rankOf(slot), tally: rank.progress ?? { ops: 0, wrong: 0, wrongExamples: [] }, error: null, errorAfterMs: null, namesKilledRank: false, resources: null });
        continue;
      }
      const { tally, error, resources } = report;
      survivors.push({ slot, rank: rankOf(slot), tally, error, errorAfterMs: error.atMs - killedAtMs, namesKilledRank: namesRank(error.message, killedRank), resources });
    }
    const failure = await Promise.race([coordinatorError, delay(1_000, null)]);
    return {
      epoch,
      plane,
      killedRank,
      ranMs,
      killedTally: victim.progress,
      survivors,
      coordinatorError: failure,
      coordinatorNamesKilledRank: failure !== null && namesRank(failure, killedRank),
      lost: ranks.flatMap((rank, slot) => (rank.running ? [] : [slot])),
    };
  } finally {
    await coordinator.close();
  }
}
