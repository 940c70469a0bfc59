/**
 * Links on demand (#47 item 3, docs/architecture.md "Links on demand") with every rank a process
 * of its own: a job of 16 or 32 ranks that only all-reduces small tensors holds at most
 * 2 log2 N + 8 sockets per rank (every descriptor that is a socket, /proc/self/fd: its data links,
 * its listener, its two coordinator channels, its stdio pipes), where every pair connecting at the
 * start held 4 (N - 1) + 4 (128 at 32 ranks); split into two communicators of N / 2 (even and odd
 * ranks) that run small all-reduces on native planes of their own, each adds at most its listener,
 * the data links its schedule names (recursive doubling's log2 (N / 2) peers and the ring's two
 * neighbours, a link each way) and the job's links its set-up traded endpoints on (recursive
 * doubling again: log2 (N / 2) pairs), where every pair of its members at creation added
 * 6 (N / 2 - 1) + 1 (43 at 16 ranks); a point-to-point pair no collective used connects on
 * its first message; and a rank killed mid-collective still fails every survivor's pending
 * collective, naming it, though most survivors never had a link to it: the coordinator tells them.
 */
import { describe, expect, it } from 'vitest';
import { cleanUpJobsAfterEach, describeRank, forgetCallerSettings, liveProcesses, type RankProcess, resultOf, startProcessJob } from '../helpers/rank-process.js';

forgetCallerSettings();
const cleanup = cleanUpJobsAfterEach();
const CHILD = 'spec/helpers/rank-child.ts';

describe('links on demand, ranks as processes', () => {
  it.each([16, 32])('%i ranks doing only small all-reduces hold at most 2 log2 N + 8 sockets each, and split into halves only what each half uses on top; a pair first used by a message connects then', async (worldSize) => {
    const { coordinator, ranks } = await startProcessJob(cleanup, worldSize, { script: CHILD, scenario: 'small-all-reduces', transport: 'tcp_peer', timeoutMs: 60_000 });
    const exits = await Promise.all(ranks.map((rank) => rank.exited));
    exits.forEach((exit, rank) => expect(exit, describeRank(ranks[rank]!)).toEqual({ code: 0, signal: null }));
    await expect(coordinator.done).resolves.toBeUndefined();
    const total = (worldSize * (worldSize - 1)) / 2;
    const bound = 2 * Math.log2(worldSize) + 8;
    const half = worldSize / 2;
    // Its listener, a data link each way to each peer its small all-reduce names, and the job's
    // links its members traded endpoints on.
    const splitBound = bound + 1 + 2 * (Math.log2(half) + 2) + 2 * Math.log2(half);
    const counts = ranks.map((rank) => resultOf(rank, 'sockets') as number);
    const splitCounts = ranks.map((rank) => resultOf(rank, 'splitSockets') as number);
    process.stdout.write(
      `[links on demand] ${worldSize} ranks: sockets per rank ${Math.min(...counts)}..${Math.max(...counts)} (bound ${bound}); ` +
        `split in halves ${Math.min(...splitCounts)}..${Math.max(...splitCounts)} (bound ${splitBound})\n`,
    );
    for (const [rank, child] of ranks.entries()) {
      expect(resultOf(child, 'allReduce'), describeRank(child)).toEqual([total, 19 * worldSize]);
      expect(resultOf(child, 'sockets'), describeRank(child)).toBeLessThanOrEqual(bound);
      // The half of rank parity p: job ranks 2m + p for m < N / 2.
      const parity = rank % 2;
      expect(resultOf(child, 'halfAllReduce'), describeRank(child)).toEqual([half * (half - 1) + parity * half, 19 * half]);
      expect(resultOf(child, 'splitSockets'), describeRank(child)).toBeLessThanOrEqual(splitBound);
    }
    expect(resultOf(ranks[worldSize / 2 + 1]!, 'farMessage')).toEqual([1, 2, 3]);
    expect(liveProcesses()).toEqual([]);
  }, 300_000);

  it('16 ranks: a rank killed mid-all-reduce fails every survivor pending collective, naming it, linked to it or not', async () => {
    const victimRank = 5;
    const timeoutMs = 30_000;
    const { ranks } = await startProcessJob(cleanup, 16, { script: CHILD, scenario: 'die-in-allreduce', transport: 'tcp_peer', timeoutMs, env: { VICTIM_RANK: String(victimRank) } });
    const victim = ranks[victimRank]!;
    const survivors = ranks.filter((rank) => rank !== victim);
    await Promise.all([victim.waitFor(/^BLOCKING$/), ...survivors.map((rank) => rank.waitFor(/^WAITING$/))]);
    const killed = Date.now();
    victim.child.kill('SIGKILL');
    const errors = await Promise.all(survivors.map((rank: RankProcess) => rank.waitFor(/^ERROR /)));
    const elapsed = Date.now() - killed;
    for (const [index, line] of errors.entries()) {
      expect(line, describeRank(survivors[index]!)).toMatch(new RegExp(`^ERROR REMOTE_ABORT .*rank ${victimRank}\\b`));
    }
    expect(elapsed, 'survivors told well within the collective timeout').toBeLessThan(timeoutMs / 3);
    for (const rank of survivors) expect(await rank.exited, describeRank(rank)).toEqual({ code: 3, signal: null });
  }, 300_000);
});
