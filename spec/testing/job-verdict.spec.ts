/** The user's verdicts on a simulated job (#34 item 6): stuck, wrong, failed (but not stuck), ok. */
import { describe, expect, it } from 'vitest';
import { judgeJob, simulateJob } from '../../lib/testing/index.js';

const total = async (rank: { rank: number; allReduce(data: Int32Array): Promise<Int32Array> }) => (await rank.allReduce(Int32Array.of(rank.rank + 1)))[0]!;
const isTen = (value: number) => (value === 10 ? null : `total ${value}, expected 10`);

describe('judgeJob', () => {
  it('ok, wrong, failed but not stuck, stuck: worst first, naming the ranks', async () => {
    const right = await simulateJob({ worldSize: 4, transport: 'tcp_peer' }, total);
    expect(judgeJob(right, isTen)).toEqual({ kind: 'ok', text: expect.stringMatching(/^ok: every rank returned a right value \(4 ranks, \d+ virtual ms\)$/) });

    const wrong = await simulateJob({ worldSize: 4, transport: 'tcp_peer' }, async (rank) => (await total(rank)) + (rank.rank === 2 ? 1 : 0));
    expect(judgeJob(wrong, isTen)).toEqual({ kind: 'wrong', ranks: [2], text: 'wrong: rank 2: total 11, expected 10' });

    const killed = await simulateJob({ worldSize: 4, transport: 'tcp_peer', faults: [{ kind: 'kill', rank: 3, atStep: 0 }], timeoutMs: 1_000 }, total);
    const failed = judgeJob(killed, isTen);
    expect(failed.kind).toBe('failed');
    expect(failed.text).toMatch(/^failed, not stuck: .*rank 3 was killed/);

    // A program that waits on a promise nobody resolves hangs: the worst verdict, whatever else.
    const hung = await simulateJob({ worldSize: 2, transport: 'tcp_peer' }, async (rank) => (rank.rank === 1 ? new Promise<number>(() => undefined) : total(rank)));
    const stuck = judgeJob(hung, isTen);
    expect(stuck.kind).toBe('stuck');
    expect(stuck.text).toMatch(/^stuck: rank 1 after 0 steps waited on something that can never happen/);
  });
});
