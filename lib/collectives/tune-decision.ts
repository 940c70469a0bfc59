import { median } from '../diagnostics/median.js';
import { ConfigurationError } from '../errors.js';

/**
 * How `rxccl tune` decides, at one operation and size, between what `auto` runs there (the
 * default) and what the other policies ran, from repeated samples of each: on a noisy host one
 * sample per algorithm crowns whichever happened to run in a quiet moment.
 *
 * The rule: an algorithm other than the default is kept only when every one of its samples is
 * faster than every sample of the default (its slowest below the default's fastest: the two
 * min-max ranges do not touch); of several such, the one of the lowest median (then the lowest
 * slowest sample, then the name). Otherwise the default stays. The decision depends only on the
 * samples, not on their order nor on the order the algorithms are listed in.
 */

/** The samples of one algorithm at one operation and size, in nanoseconds per call. */
export interface AlgorithmSamples {
  readonly algorithm: string;
  readonly timesNs: readonly number[];
}

/** An algorithm's samples summed up: median and min-max spread. */
export interface SampleSpread {
  readonly algorithm: string;
  readonly medianNs: number;
  readonly minNs: number;
  readonly maxNs: number;
  readonly samples: number;
}

export interface TuneDecision {
  /** The algorithm the profile names. */
  readonly algorithm: string;
  /** Whether it is another than the default: it beat the default beyond the spread. */
  readonly kept: boolean;
  /** The default: what `auto` runs at this size. */
  readonly standard: SampleSpread;
  /** The fastest other algorithm by median (the kept one, when one is), or null where every policy ran the default. */
  readonly challenger: SampleSpread | null;
  /** Why, in words: "beats", "within the spread of", "no faster than" the default, or "every policy ran it". */
  readonly verdict: 'beats' | 'within the spread of' | 'no faster than' | 'every policy ran it';
}

/** Median (the mean of the two middle samples for an even count) and min-max of `timesNs`. */
export function sampleSpread(algorithm: string, timesNs: readonly number[]): SampleSpread {
  if (timesNs.length === 0) throw new ConfigurationError(`algorithm ${algorithm} has no samples to decide on`);
  return { algorithm, medianNs: median(timesNs), minNs: Math.min(...timesNs), maxNs: Math.max(...timesNs), samples: timesNs.length };
}

/** Faster first: by median, then by slowest sample, then by name (a total order, so no input order shows through). */
function faster(first: SampleSpread, second: SampleSpread): number {
  return first.medianNs - second.medianNs || first.maxNs - second.maxNs || (first.algorithm < second.algorithm ? -1 : first.algorithm > second.algorithm ? 1 : 0);
}

/**
 * Decides between `standard` (the default's name) and the others in `measured` (samples of one
 * algorithm listed more than once are pooled). The default must have samples.
 */
export function decideAlgorithm(standard: string, measured: readonly AlgorithmSamples[]): TuneDecision {
  const pooled = new Map<string, number[]>();
  for (const { algorithm, timesNs } of measured) pooled.set(algorithm, [...(pooled.get(algorithm) ?? []), ...timesNs]);
  const own = pooled.get(standard);
  if (own === undefined || own.length === 0) throw new ConfigurationError(`the default algorithm ${standard} has no samples to decide on`);
  const base = sampleSpread(standard, own);
  const others = [...pooled]
    .filter(([algorithm, times]) => algorithm !== standard && times.length > 0)
    .map(([algorithm, times]) => sampleSpread(algorithm, times))
    .sort(faster);
  const winner = others.find((other) => other.maxNs < base.minNs);
  if (winner !== undefined) return { algorithm: winner.algorithm, kept: true, standard: base, challenger: winner, verdict: 'beats' };
  const challenger = others[0] ?? null;
  const verdict = challenger === null ? 'every policy ran it' : challenger.medianNs < base.medianNs ? 'within the spread of' : 'no faster than';
  return { algorithm: standard, kept: false, standard: base, challenger, verdict };
}

/** One spread as the decision lines print it, in `unit`: "ring 0.81 ms (0.78-0.85)". */
function formatSpread({ algorithm, medianNs, minNs, maxNs }: SampleSpread, unit: 'ms' | 'us'): string {
  const at = (ns: number) => (ns / (unit === 'ms' ? 1e6 : 1e3)).toFixed(2);
  return `${algorithm} ${at(medianNs)} ${unit} (${at(minNs)}-${at(maxNs)})`;
}

/**
 * The decision in one line, after `where` ("allreduce 1 MiB"), in one unit (ms where a sample
 * took a millisecond or more, else us):
 * `ring 0.81 ms (0.78-0.85) beats pairwise 1.02 ms (0.99-1.10): kept`, or
 * `ring 0.95 ms (0.80-1.20) within the spread of pairwise 1.02 ms (0.99-1.10): default kept`.
 */
export function formatDecision(where: string, decision: TuneDecision): string {
  const { standard, challenger, verdict } = decision;
  const unit = Math.max(standard.maxNs, challenger?.maxNs ?? 0) >= 1e6 ? 'ms' : 'us';
  if (challenger === null) return `${where}: ${formatSpread(standard, unit)}, ${verdict}: default kept`;
  return `${where}: ${formatSpread(challenger, unit)} ${verdict} ${formatSpread(standard, unit)}: ${decision.kept ? 'kept' : 'default kept'}`;
}
