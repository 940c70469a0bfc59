/**
 * A property test of failover under network partitions, on `rxccl/testing`'s simulated job. Rank
 * 0 is the primary and streams ROUNDS updates to every backup; a backup that hears nothing from it
 * for DETECTOR_MS (its own timer on the job's virtual clock) takes over. The property: at most one
 * rank ends as the primary, whatever partition cuts the links (and heals or not).
 *
 * The seeded bug: the primary fires its updates and forgets them, and any backup may take over.
 * fast-check draws partitions, finds a split brain and shrinks it to the smallest: two ranks,
 * rank 1 cut off from the start, for good: it takes over, and the primary never learns. The fix
 * needs two things, and the property finds the second when only the first is made: the primary
 * waits for every backup's acknowledgement of every update (a backup that took over stops
 * acknowledging, so the old primary's wait fails, rxccl's receive timeout, instead of it carrying
 * on), and only one backup, the successor (rank 1), may take over (else a second backup, starved
 * while the primary waits on the cut-off one, takes over too).
 *
 *   tsx examples/failover.ts          # prints the shrunk counterexample, then checks the fix
 */
import fc from 'fast-check';
import { pathToFileURL } from 'node:url';
import { judgeJob, type PartitionFault, simulateJob, type SimulatedRank } from '../lib/testing/index.js';

const ROUNDS = 3;
const DETECTOR_MS = 500;
const ACK_TAG = 1_000;

export type Role = 'primary' | 'took over' | 'backup';

/** One rank's part; resolves with the role it ends in (or throws, as rxccl fails it). */
export async function failover(rank: SimulatedRank, fixed: boolean): Promise<Role> {
  if (rank.rank === 0) {
    for (let round = 0; round < ROUNDS; round++) {
      for (let backup = 1; backup < rank.worldSize; backup++) await rank.send(backup, round, Int32Array.of(round));
      if (fixed) for (let backup = 1; backup < rank.worldSize; backup++) await rank.receive(backup, ACK_TAG + round, { dtype: 'i32', count: 1 });
    }
    return 'primary';
  }
  const mayTakeOver = !fixed || rank.rank === 1;
  for (let round = 0; round < ROUNDS; round++) {
    const update = rank.receive(0, round, { dtype: 'i32', count: 1 });
    update.catch(() => undefined); // given up on below: its later failure is not this rank's
    const heard = mayTakeOver ? await Promise.race([update.then(() => true), rank.sleep(DETECTOR_MS).then(() => false)]) : await update.then(() => true);
    if (!heard) return 'took over';
    if (fixed) await rank.send(0, ACK_TAG + round, Int32Array.of(round));
  }
  return 'backup';
}

const arbPartition = fc.integer({ min: 2, max: 4 }).chain((worldSize) =>
  fc.record({
    worldSize: fc.constant(worldSize),
    partition: fc.record(
      {
        kind: fc.constant('partition' as const),
        side: fc.uniqueArray(fc.integer({ min: 1, max: worldSize - 1 }), { minLength: 1, maxLength: worldSize - 1 }).map((side) => side.sort((a, b) => a - b)),
        fromMs: fc.integer({ min: 0, max: 2_000 }),
        healMs: fc.integer({ min: 0, max: 4_000 }),
      },
      { requiredKeys: ['kind', 'side', 'fromMs'] },
    ),
  }),
);

/** At most one rank ends as the primary, under any partition and any order of delivery. */
export function failoverProperty(fixed: boolean) {
  return fc.asyncProperty(arbPartition, fc.scheduler(), async ({ worldSize, partition }, scheduler) => {
    const fault: PartitionFault = { ...partition, ...(partition.healMs === undefined ? {} : { healMs: partition.fromMs + partition.healMs }) };
    const result = await simulateJob({ worldSize, transport: 'tcp_peer', dataPlane: 'js', faults: [fault], timeoutMs: 2_000, scheduler }, (rank) => failover(rank, fixed));
    const leaders = result.ranks.filter((outcome) => outcome.status === 'returned' && outcome.value !== 'backup').map((outcome) => outcome.rank);
    if (leaders.length > 1) throw new Error(`split brain: ranks [${leaders.join(',')}] each ended as the primary (${judgeJob(result).text})`);
    // A partition may fail the job; it must never hang it.
    const verdict = judgeJob(result);
    if (verdict.kind === 'stuck') throw new Error(verdict.text);
  });
}

export function checkFailover(fixed: boolean, seed: number) {
  return fc.check(failoverProperty(fixed), { seed, numRuns: 100 });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const buggy = await checkFailover(false, 7);
  console.log(buggy.failed ? `the seeded bug, found and shrunk: ${String(buggy.errorInstance)}\n${fc.defaultReportMessage(buggy)}` : 'the seeded bug was not found (try more runs)');
  const fixed = await checkFailover(true, 7);
  console.log(fixed.failed ? `the fix fails:\n${fc.defaultReportMessage(fixed)}` : 'the fix holds over 100 drawn partitions and interleavings');
}
