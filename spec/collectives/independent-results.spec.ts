/**
 * Fresh results are independent (native/result_pool.h; docs/architecture.md "Fresh results"): a
 * result of 64 KiB or more may be a mapping a freed result left, so no two live results may share
 * memory, whichever sizes come and go. fast-check draws any sequence of default all-reduces (sizes
 * across the pool's classes: below 64 KiB an ordinary array, then mappings rounded to 64 KiB, then
 * from 4 MiB huge pages), drops of held results and collections (which send dropped results'
 * mappings back to the pool, where the next result of about their size takes them), on both ranks
 * of one process, which share the pool. After every step each held result still holds exactly its
 * own sum: a later call writing into a live result's memory would change it.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataPlaneEngine, loadAddon } from '../../lib/kernels/addon.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { collect } from '../helpers/collector.js';
import { startCoordinator, type TestJob } from '../helpers/job.js';

const native = dataPlaneEngine() !== null;
if (!native) console.warn('spec/collectives/independent-results.spec.ts: skipped: the native addon is not built here (results are ordinary typed arrays)');

const KiB = 1024;
const MiB = 1024 * KiB;
/** Result sizes in bytes, one or two per class of the pool (native/result_mapping.cc). */
const SIZES = [16 * KiB, 64 * KiB, 64 * KiB + 4, MiB + 4, 4 * MiB, 5 * MiB + 4];

/** Rank `rank`'s element `index` in call `call`; all small enough that the i32 sums are exact. */
const element = (call: number, rank: number, index: number) => call * 7919 + rank * 13 + (index % 1021);

/** What every rank's result of call `call` over `count` i32 holds (2 ranks). */
function sums(call: number, count: number): Int32Array {
  return Int32Array.from({ length: count }, (_, index) => element(call, 0, index) + element(call, 1, index));
}

type Step = { readonly kind: 'call'; readonly bytes: number } | { readonly kind: 'drop'; readonly pick: number } | { readonly kind: 'collect' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SIZES).map((bytes) => ({ kind: 'call', bytes }) as const) },
  { weight: 2, arbitrary: fc.nat().map((pick) => ({ kind: 'drop', pick }) as const) },
  { weight: 1, arbitrary: fc.constant({ kind: 'collect' } as const) },
);

/** A held call: each rank's result, and the sums both must hold. */
interface Held {
  readonly results: Int32Array[];
  readonly want: Int32Array;
}

/** Whether `result` holds exactly `want`'s bytes (compared as memory, not element by element). */
function holds(result: Int32Array, want: Int32Array): boolean {
  return Buffer.from(result.buffer, result.byteOffset, result.byteLength).equals(Buffer.from(want.buffer, want.byteOffset, want.byteLength));
}

/** Collects and lets the finalizers run, so that dropped results' mappings are back in the pool. */
async function collectAndSettle(): Promise<void> {
  collect();
  await new Promise((resolve) => setImmediate(resolve));
}

describe.skipIf(!native)('fresh results are independent', () => {
  let job: TestJob;
  let sessions: RankSession[];
  beforeAll(async () => {
    job = await startCoordinator(2, { timeoutMs: 10_000, transport: 'tcp_peer' });
    sessions = await Promise.all([0, 1].map((rank) => job.openRank(rank, { dataPlane: 'native' })));
  });
  afterAll(async () => {
    await job.dispose();
  });

  it('any sequence of default all-reduces of sizes across the pool classes, drops and collections: every held result keeps exactly its own sums', async () => {
    let calls = 0;
    let recycled = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const held: Held[] = [];
        for (const { kind, ...at } of steps) {
          if (kind === 'call') {
            const { bytes } = at as { bytes: number };
            const call = ++calls;
            const count = bytes / 4;
            const pooled = loadAddon().resultPoolBytes();
            const results = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.from({ length: count }, (_, index) => element(call, session.rank, index)), 'sum')));
            if (loadAddon().resultPoolBytes() < pooled) recycled++;
            held.push({ results, want: sums(call, count) });
          } else if (kind === 'drop' && held.length > 0) {
            held.splice((at as { pick: number }).pick % held.length, 1);
          } else if (kind === 'collect') {
            await collectAndSettle();
          }
          for (const { results, want } of held) for (const result of results) expect(holds(result, want)).toBe(true);
        }
        held.length = 0;
        await collectAndSettle();
      }),
      { numRuns: 25 },
    );
    // The property ran on recycled mappings, not only on new ones.
    expect(recycled).toBeGreaterThan(0);
  }, 120_000);
});
