/**
 * `rxccl tune`'s decision at one operation and size (lib/collectives/tune-decision.ts): another
 * algorithm than the default is kept only when all its samples are faster than all the default's;
 * the decision is a function of the samples alone, whatever order they come in.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AlgorithmSamples, decideAlgorithm, formatDecision, sampleSpread } from '../../lib/collectives/tune-decision.js';
import { refusal } from '../helpers/refusal.js';

const ALGORITHMS = ['staged', 'ring', 'pairwise', 'tree', 'hierarchical'] as const;

/** The default's samples and the others', one to seven samples each, times that often tie. */
const measured = fc
  .record({
    standard: fc.constantFrom(...ALGORITHMS),
    samples: fc.array(fc.record({ algorithm: fc.constantFrom(...ALGORITHMS), timesNs: fc.array(fc.integer({ min: 1, max: 40 }).map((n) => n * 1000), { minLength: 1, maxLength: 7 }) }), {
      minLength: 0,
      maxLength: 6,
    }),
    own: fc.array(fc.integer({ min: 1, max: 40 }).map((n) => n * 1000), { minLength: 1, maxLength: 7 }),
  })
  .map(({ standard, samples, own }) => ({ standard, samples: [{ algorithm: standard, timesNs: own }, ...samples] as AlgorithmSamples[] }));

/** Every sample of `algorithm`, pooled over the lists that name it. */
const samplesOf = (samples: readonly AlgorithmSamples[], algorithm: string) => samples.filter((entry) => entry.algorithm === algorithm).flatMap((entry) => entry.timesNs);

describe('decideAlgorithm', () => {
  it('never keeps an algorithm one of whose samples is as slow as one of the default\'s; keeps the default otherwise', () => {
    fc.assert(
      fc.property(measured, ({ standard, samples }) => {
        const decision = decideAlgorithm(standard, samples);
        const defaults = samplesOf(samples, standard);
        if (!decision.kept) {
          expect(decision.algorithm).toBe(standard);
          // Nobody beat the default beyond the spread.
          for (const { algorithm } of samples) if (algorithm !== standard) expect(Math.max(...samplesOf(samples, algorithm))).toBeGreaterThanOrEqual(Math.min(...defaults));
          return;
        }
        expect(decision.algorithm).not.toBe(standard);
        expect(Math.max(...samplesOf(samples, decision.algorithm))).toBeLessThan(Math.min(...defaults));
      }),
    );
  });

  it('is deterministic and independent of the order of the samples and of the algorithms', () => {
    fc.assert(
      fc.property(measured, fc.infiniteStream(fc.nat()), ({ standard, samples }, shuffles) => {
        const shuffle = <T>(values: readonly T[]) => values.map((value) => ({ value, key: shuffles.next().value as number })).sort((a, b) => a.key - b.key).map(({ value }) => value);
        const reordered = shuffle(samples.map(({ algorithm, timesNs }) => ({ algorithm, timesNs: shuffle(timesNs) })));
        const decision = decideAlgorithm(standard, samples);
        expect(decideAlgorithm(standard, samples)).toEqual(decision);
        expect(decideAlgorithm(standard, reordered)).toEqual(decision);
      }),
    );
  });

  it('of several algorithms beyond the spread, keeps the one of the lowest median', () => {
    fc.assert(
      fc.property(measured, ({ standard, samples }) => {
        const decision = decideAlgorithm(standard, samples);
        if (!decision.kept) return;
        const floor = Math.min(...samplesOf(samples, standard));
        const beyond = [...new Set(samples.map(({ algorithm }) => algorithm))].filter((algorithm) => algorithm !== standard && Math.max(...samplesOf(samples, algorithm)) < floor);
        for (const algorithm of beyond) expect(decision.challenger!.medianNs).toBeLessThanOrEqual(sampleSpread(algorithm, samplesOf(samples, algorithm)).medianNs);
      }),
    );
  });

  it('says what it decided and why, one line per size', () => {
    const ms = (...values: number[]) => values.map((value) => value * 1e6);
    const standard = { algorithm: 'pairwise', timesNs: ms(1.02, 0.99, 1.1) };
    expect(formatDecision('allreduce 1 MiB', decideAlgorithm('pairwise', [standard, { algorithm: 'ring', timesNs: ms(0.81, 0.78, 0.85) }]))).toBe(
      'allreduce 1 MiB: ring 0.81 ms (0.78-0.85) beats pairwise 1.02 ms (0.99-1.10): kept',
    );
    expect(formatDecision('allreduce 1 MiB', decideAlgorithm('pairwise', [standard, { algorithm: 'ring', timesNs: ms(0.81, 0.78, 1.05) }]))).toBe(
      'allreduce 1 MiB: ring 0.81 ms (0.78-1.05) within the spread of pairwise 1.02 ms (0.99-1.10): default kept',
    );
    expect(formatDecision('allreduce 8 B', decideAlgorithm('staged', [{ algorithm: 'staged', timesNs: [90_000, 95_000] }, { algorithm: 'ring', timesNs: [120_000] }]))).toBe(
      'allreduce 8 B: ring 120.00 us (120.00-120.00) no faster than staged 92.50 us (90.00-95.00): default kept',
    );
    expect(formatDecision('allgather 8 B', decideAlgorithm('ring', [{ algorithm: 'ring', timesNs: [90_000] }, { algorithm: 'ring', timesNs: [80_000] }]))).toBe(
      'allgather 8 B: ring 85.00 us (80.00-90.00), every policy ran it: default kept',
    );
  });

  it('refuses to decide without samples of the default', () => {
    expect(refusal(() => decideAlgorithm('ring', [{ algorithm: 'staged', timesNs: [1] }]))).toBe('the default algorithm ring has no samples to decide on');
  });
});
