/**
 * examples/checkpoint-restart.ts: kills and restarts find each of the seeded bugs while the other
 * is fixed, shrunk to a readable case; with both fixed the property holds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkCheckpoints } from '../../examples/checkpoint-restart.js';

describe('examples/checkpoint-restart.ts', () => {
  it('finds the torn checkpoint: two ranks, rank 0 killed between its two writes at its first checkpoint, an update lost', async () => {
    const details = await checkCheckpoints({ atomic: false, fromRankZero: true }, 7);
    expect(details.failed).toBe(true);
    const [{ worldSize, kill }] = details.counterexample!;
    expect({ worldSize, kill }).toEqual({ worldSize: 2, kill: { kind: 'kill', rank: 0, atPoint: 'step saved', occurrence: 0 } });
    expect(String(details.errorInstance)).toMatch(/^Error: wrong: rank 0: weights \[\d+, \d+\], expected \[16, 8\]; .*\(rank 0 killed at fault point "step saved"\)$/);
    // The report reads: every delivery is named by run, link, index, collective and payload.
    expect(fc.defaultReportMessage(details)).toMatch(/gen 1 0>1 rail 0 #\d+ data link \((Broadcast|AllReduce), collective \d+\) i32 \[[-\d, ]*\]/);
  }, 120_000);

  it('finds ranks that resume apart: a kill where one rank has saved a step another has not, a wrong sum', async () => {
    const details = await checkCheckpoints({ atomic: true, fromRankZero: false }, 7);
    expect(details.failed).toBe(true);
    const [{ kill }] = details.counterexample!;
    expect(kill.kind).toBe('kill');
    // The first restart's cause; ranks apart then time out, and may restart the job again.
    expect(String(details.errorInstance)).toMatch(/^Error: wrong: .*\(rank \d killed at (step \d|fault point "saved"( \(occurrence \d\))?)(; rank \d threw TIMEOUT: .*)?\)$/);
  }, 120_000);

  it('with one write per checkpoint and every rank resuming from rank 0, any kill leaves the weights of a run without one', async () => {
    const details = await checkCheckpoints({ atomic: true, fromRankZero: true }, 7);
    expect(details.failed, String(details.errorInstance)).toBe(false);
  }, 120_000);
});
