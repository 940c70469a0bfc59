/**
 * Whether a process that lived through the whole soak held on to what its failed sessions (or,
 * for the driver, its coordinators) used. Samples follow a full collection (resources.ts), yet
 * RSS still moves by tens of MiB from one epoch to the next with what the allocators keep of the
 * last epoch's 1 MiB tensors, and the first epoch on each plane grows a process once (the
 * driver's first coordinator-plane job: about 30 MiB). So each measure's lowest value over the
 * last round of planes (at least MIN_WINDOW epochs) is compared with its highest over the first: noise stays under that,
 * and a leak lifts every later sample until it does not.
 */
import type { Resources } from './resources.js';

/** What each measure may grow by. Descriptors are counted exactly: a closed session leaves none. */
export const GROWTH_BOUNDS = { rssBytes: 16 * 2 ** 20, heapUsedBytes: 2 * 2 ** 20, fds: 0 } as const;

type Measure = keyof typeof GROWTH_BOUNDS;

/** A process that lived through the whole run: what it held at its start and after each epoch. */
export interface LongLived {
  readonly name: string;
  readonly start: Resources;
  readonly afterEpochs: readonly Resources[];
}

export interface Growth {
  readonly name: string;
  readonly start: Resources;
  /** Each measure's highest value after the epochs of the first round of planes. */
  readonly firstRound: Record<Measure, number>;
  /** Each measure's lowest value after the epochs of the last round. */
  readonly lastRound: Record<Measure, number>;
  readonly end: Resources;
  /** The measures past their bound. */
  readonly grown: readonly Measure[];
}

const MEASURES = Object.keys(GROWTH_BOUNDS) as Measure[];

/**
 * A window of at least this many epochs: with one plane a round is a single sample, and a single
 * RSS sample is noise (one process went from 113 to 164 MiB and back, its heap flat).
 */
const MIN_WINDOW = 3;

/** `round`: epochs in a round of planes (one epoch on each); the windows are at least MIN_WINDOW epochs. */
export function growthOf(process: LongLived, round: number): Growth {
  const window = Math.min(Math.max(round, MIN_WINDOW), process.afterEpochs.length);
  const first = process.afterEpochs.slice(0, window);
  const last = process.afterEpochs.slice(-window);
  const over = (samples: readonly Resources[], pick: (...values: number[]) => number) =>
    Object.fromEntries(MEASURES.map((measure) => [measure, pick(...samples.map((sample) => sample[measure]))])) as Record<Measure, number>;
  const firstRound = over(first, Math.max);
  const lastRound = over(last, Math.min);
  return {
    name: process.name,
    start: process.start,
    firstRound,
    lastRound,
    end: process.afterEpochs.at(-1)!,
    grown: MEASURES.filter((measure) => lastRound[measure] - firstRound[measure] > GROWTH_BOUNDS[measure]),
  };
}
