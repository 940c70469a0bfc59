/**
 * Fresh results (native/result_memory.h, result_pool.h, lib/kernels/result-memory.ts;
 * docs/architecture.md "Fresh results"): from 64 KiB a result is a mapping of its own, exactly as
 * long as asked, from 4 MiB in 2 MiB pages where transparent huge pages allow, counted as external
 * memory, and kept in the pool once the collector frees it, for the next result of about its size;
 * below, an ordinary typed array.
 */
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../lib/kernels/addon.js';
import { freshResult, resultAllocator } from '../../lib/kernels/result-memory.js';

const MiB = 1 << 20;
const allocate = resultAllocator(loadAddon);
const addon = loadAddon();
const reason = allocate === null ? ' (skipped: the native addon is not built here)' : '';
if (allocate === null) console.warn('spec/kernels/result-memory.spec.ts: skipped: the native addon is not built here');

/** Transparent huge pages' mode: `always`, `madvise` or `never` (null where the kernel has none). */
function hugePagesMode(): string | null {
  try {
    return /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))?.[1] ?? null;
  } catch {
    return null;
  }
}

/** This process's anonymous memory in huge pages, in bytes. */
function anonHugeBytes(): number {
  const kib = /AnonHugePages:\s+(\d+) kB/.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))?.[1];
  return Number(kib ?? 0) * 1024;
}

/** The collector, run now (what --expose-gc gives). */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/**
 * Collects until external memory stops changing: finalizers run after the collection that found
 * their buffers unreachable, so buffers an earlier test dropped (25 MiB in the first test here)
 * would otherwise be freed in the middle of a measurement.
 */
async function settleExternalMemory(): Promise<void> {
  let last = Number.NaN;
  for (let round = 0; round < 20 && process.memoryUsage().external !== last; round++) {
    last = process.memoryUsage().external;
    collect();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const mode = hugePagesMode();
const hugeReason = mode === 'always' || mode === 'madvise' ? '' : ` (skipped: transparent huge pages are ${mode ?? 'absent'} here)`;
if (hugeReason !== '') console.warn(`spec/kernels/result-memory.spec.ts: the huge-page check${hugeReason}`);

describe.skipIf(allocate === null)(`fresh results${reason}`, () => {
  it('below 64 KiB: an ordinary zeroed typed array (the addon declines); from 64 KiB: a buffer of exactly the bytes asked, writable end to end', () => {
    expect(allocate!(64 * 1024 - 1)).toBeUndefined();
    const small = freshResult(64 * 1024 - 1);
    expect(small.byteLength).toBe(64 * 1024 - 1);
    expect(small.buffer.byteLength).toBe(64 * 1024 - 1);
    expect(small.every((byte) => byte === 0)).toBe(true);
    for (const bytes of [64 * 1024, MiB + 3, 4 * MiB, 5 * MiB + 3, 16 * MiB]) {
      const result = freshResult(bytes);
      expect(result.byteLength).toBe(bytes);
      expect(result.buffer.byteLength).toBe(bytes);
      result.fill(0xab);
      expect(result[0]).toBe(0xab);
      expect(result[bytes - 1]).toBe(0xab);
      expect(new Float32Array(result.buffer, 0, bytes >> 2).length).toBe(bytes >> 2);
    }
  });

  it('counts as external memory until the collector frees it; then its mapping waits in the pool, and the next result of about its size is that mapping', async () => {
    await settleExternalMemory();
    const before = process.memoryUsage().external;
    let result: Uint8Array | null = freshResult(3 * MiB + 5);
    // (It may be a mapping the first test's results left: what the pool keeps is counted from here.)
    const pooled = addon.resultPoolBytes();
    // Within 64 KiB: other external memory (a few bytes of strings, handles) comes and goes too.
    expect(process.memoryUsage().external - before).toBeGreaterThanOrEqual(3 * MiB - 64 * 1024);
    result.fill(0x5a);
    result = null;
    // Finalizers run after the collection that found the buffer unreachable.
    const freed = () => process.memoryUsage().external - before < MiB && addon.resultPoolBytes() >= pooled + 3 * MiB;
    for (let round = 0; round < 10 && !freed(); round++) {
      collect();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(process.memoryUsage().external - before).toBeLessThan(MiB);
    const kept = addon.resultPoolBytes();
    expect(kept).toBeGreaterThanOrEqual(pooled + 3 * MiB);
    // The same mapping again, the smallest that fits: no page of it new (it holds the freed result's bytes).
    const again = freshResult(3 * MiB);
    expect(addon.resultPoolBytes()).toBeLessThanOrEqual(kept - 3 * MiB);
    expect(again[0]).toBe(0x5a);
    expect(again[3 * MiB - 1]).toBe(0x5a);
  });

  it.skipIf(hugeReason !== '')(`is written in huge pages where transparent huge pages allow${hugeReason}`, () => {
    const before = anonHugeBytes();
    // A size no freed result here fits: a new mapping.
    const result = freshResult(24 * MiB);
    result.fill(7);
    // The kernel may fall back to small pages for some of them (fragmented memory): most are huge.
    expect(anonHugeBytes() - before).toBeGreaterThanOrEqual(12 * MiB);
    expect(result[24 * MiB - 1]).toBe(7);
  });
});
