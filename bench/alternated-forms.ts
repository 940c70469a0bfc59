import type { RankSession } from '../lib/session/rank-session.js';
import { median } from '../lib/diagnostics/median.js';

/** A bench's forms by name: each call runs one round of one form on this rank. */
export type Forms = Readonly<Record<string, () => Promise<unknown>>>;

/**
 * Times `forms` on every rank of `session`, alternated sample by sample so their ratios come from
 * one window of a noisy machine: after a warm-up, each form's rounds per sample are as many as fit
 * in about `sampleMs` (at least 3; the slowest rank's time, so every rank agrees), a round's time
 * is the slowest rank's, and rank 0 prints each sample as `SAMPLE {"form": ms per round, ...}`
 * (read back by `rankJobLines(..., 'SAMPLE')`).
 */
export async function sampleForms(session: RankSession, forms: Forms, samples: number, sampleMs: number): Promise<void> {
  const slowest = async (ms: number) => (await session.allReduce(Float64Array.of(ms), 'max'))[0]!;
  const timed = async (call: () => Promise<unknown>, rounds: number) => {
    await session.barrier();
    const started = performance.now();
    for (let round = 0; round < rounds; round++) await call();
    return slowest((performance.now() - started) / rounds);
  };
  const rounds: Record<string, number> = {};
  for (const [name, call] of Object.entries(forms)) {
    await timed(call, 2);
    rounds[name] = Math.max(3, Math.round(sampleMs / (await timed(call, 2))));
  }
  for (let sample = 0; sample < samples; sample++) {
    const times: Record<string, number> = {};
    for (const [name, call] of Object.entries(forms)) times[name] = await timed(call, rounds[name]!);
    if (session.rank === 0) process.stdout.write(`SAMPLE ${JSON.stringify(times)}\n`);
  }
}

/** Ratios as benches print them: the median, and the min-max in brackets. */
export function spread(ratios: readonly number[]): string {
  return `${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`;
}

/** Samples of `sampleForms`: a form's median ms, and the spread of same-sample ratios over / under. */
export function sampleSummary(samples: readonly Readonly<Record<string, number>>[]): { ms(name: string): number; ratio(over: string, under: string): string } {
  return {
    ms: (name) => median(samples.map((sample) => sample[name]!)),
    ratio: (over, under) => spread(samples.map((sample) => sample[over]! / sample[under]!)),
  };
}
