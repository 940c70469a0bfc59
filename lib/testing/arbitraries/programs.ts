/**
 * Collective programs: collectives of every kind, dtype and op, and point-to-point messages, with
 * shapes consistent across the ranks of one world (what every rank passes fits what the others
 * pass), so a program is valid by construction and only the system under test can fail it.
 */
import fc from 'fast-check';
import { DTYPES, type DType } from '../../protocol/element-type.js';
import { buildCase, type CollectiveCase, type CollectiveKind, COLLECTIVE_KINDS, opsFor } from '../collective-case.js';
import type { MessageCase, ProgramStep } from '../program.js';
import { seededRandom } from '../random-data.js';
import { arbTensorBytes } from './tensors.js';

/** What the program arbitraries draw from. */
export interface ArbProgramOptions {
  /** The collectives drawn (default every kind). */
  readonly kinds?: readonly CollectiveKind[];
  /** The dtypes drawn (default every dtype). */
  readonly dtypes?: readonly DType[];
  /** Largest element count per rank (or per destination shard). */
  readonly maxCount?: number;
}

/** One collective with random data, as every rank of `worldSize` ranks performs it. */
export function arbCollectiveCase(worldSize: number, options: ArbProgramOptions = {}): fc.Arbitrary<CollectiveCase> {
  return fc
    .record({
      kind: fc.constantFrom(...(options.kinds ?? COLLECTIVE_KINDS)),
      dtype: fc.constantFrom(...(options.dtypes ?? DTYPES)),
      opIndex: fc.nat(),
      tagged: fc.boolean(),
      root: fc.integer({ min: 0, max: worldSize - 1 }),
      count: fc.integer({ min: 1, max: options.maxCount ?? 8 }),
      seed: fc.integer(),
    })
    .map(({ kind, dtype, opIndex, tagged, root, count, seed }) => {
      const ops = opsFor(dtype);
      return buildCase({ kind, dtype, tagged, op: ops[opIndex % ops.length]!, root, count }, worldSize, seededRandom(seed));
    });
}

/** A message between two different ranks of a world of at least 2. */
export function arbMessageCase(worldSize: number, options: ArbProgramOptions = {}): fc.Arbitrary<MessageCase> {
  return fc
    .record({
      dtype: fc.constantFrom(...(options.dtypes ?? DTYPES)),
      from: fc.integer({ min: 0, max: worldSize - 1 }),
      hop: fc.integer({ min: 1, max: Math.max(1, worldSize - 1) }),
      tag: fc.integer({ min: 0, max: 1000 }),
      count: fc.integer({ min: 0, max: options.maxCount ?? 8 }),
    })
    .chain(({ dtype, from, hop, tag, count }) =>
      arbTensorBytes(dtype, count).map((bytes) => ({ kind: 'message' as const, dtype, from, to: (from + hop) % worldSize, tag, bytes })),
    );
}

/** A program of up to `maxSteps` steps (messages only in worlds of 2 or more). */
export function arbProgram(worldSize: number, options: ArbProgramOptions & { readonly maxSteps?: number } = {}): fc.Arbitrary<ProgramStep[]> {
  const step: fc.Arbitrary<ProgramStep> =
    worldSize < 2 ? arbCollectiveCase(worldSize, options) : fc.oneof({ weight: 3, arbitrary: arbCollectiveCase(worldSize, options) }, { weight: 1, arbitrary: arbMessageCase(worldSize, options) });
  return fc.array(step, { minLength: 1, maxLength: options.maxSteps ?? 6 });
}

/** A ring order of `worldSize` ranks (every rank once; shrinks towards 0, 1, 2, ...). */
export function arbRingOrder(worldSize: number): fc.Arbitrary<number[]> {
  return fc.array(fc.nat(), { minLength: worldSize, maxLength: worldSize }).map((keys) =>
    Array.from({ length: worldSize }, (_, rank) => rank).sort((a, b) => keys[a]! - keys[b]! || a - b),
  );
}

/**
 * Topology groups of `worldSize` ranks (GX1_TOPOLOGY_GROUPS): any partition of them (uneven,
 * interleaved, one rank each), groups and members listed in any order, at least `minGroups`
 * groups (default 1; GX1_TOPOLOGY_GROUPS itself needs 2).
 */
export function arbTopologyGroups(worldSize: number, minGroups = 1): fc.Arbitrary<number[][]> {
  return fc
    .tuple(fc.array(fc.integer({ min: 0, max: worldSize - 1 }), { minLength: worldSize, maxLength: worldSize }), arbRingOrder(worldSize))
    .map(([labels, listing]) => {
      const groups = new Map<number, number[]>();
      for (const rank of listing) groups.set(labels[rank]!, [...(groups.get(labels[rank]!) ?? []), rank]);
      return [...groups.values()];
    })
    .filter((groups) => groups.length >= minGroups);
}
