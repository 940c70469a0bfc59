/**
 * Fresh results in huge pages (native/result_memory.h, lib/kernels/result-memory.ts;
 * docs/architecture.md "Fresh results"): from 4 MiB a result is a mapping of its own, zeroed,
 * exactly as long as asked, in 2 MiB pages where transparent huge pages allow, counted as external
 * memory and unmapped once the collector frees it; below, an ordinary typed array.
 */
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../lib/kernels/addon.js';
import { freshResult, hugeAllocator } from '../../lib/kernels/result-memory.js';

const MiB = 1 << 20;
const allocate = hugeAllocator(loadAddon);
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
  it('below 4 MiB: an ordinary zeroed typed array (the addon declines); from 4 MiB: a zeroed buffer of exactly the bytes asked, writable end to end', () => {
    expect(allocate!(4 * MiB - 1)).toBeUndefined();
    const small = freshResult(4 * MiB - 1);
    expect(small.byteLength).toBe(4 * MiB - 1);
    expect(small.buffer.byteLength).toBe(4 * MiB - 1);
    expect(small.every((byte) => byte === 0)).toBe(true);
    for (const bytes of [4 * MiB, 5 * MiB + 3, 16 * MiB]) {
      const result = freshResult(bytes);
      expect(result.byteLength).toBe(bytes);
      expect(result.buffer.byteLength).toBe(bytes);
      expect(result.every((byte) => byte === 0)).toBe(true);
      result.fill(0xab);
      expect(result[0]).toBe(0xab);
      expect(result[bytes - 1]).toBe(0xab);
      expect(new Float32Array(result.buffer, 0, bytes >> 2).length).toBe(bytes >> 2);
    }
  });

  it('counts as external memory until the collector frees it, then is unmapped', async () => {
    await settleExternalMemory();
    const before = process.memoryUsage().external;
    let result: Uint8Array | null = freshResult(5 * MiB);
    // Within 64 KiB: other external memory (a few bytes of strings, handles) comes and goes too.
    expect(process.memoryUsage().external - before).toBeGreaterThanOrEqual(5 * MiB - 64 * 1024);
    result.fill(1);
    result = null;
    // Finalizers run after the collection that found the buffer unreachable.
    for (let round = 0; round < 5 && process.memoryUsage().external - before >= MiB; round++) {
      collect();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(process.memoryUsage().external - before).toBeLessThan(MiB);
  });

  it.skipIf(hugeReason !== '')(`is written in huge pages where transparent huge pages allow${hugeReason}`, () => {
    const before = anonHugeBytes();
    const result = freshResult(16 * MiB);
    result.fill(7);
    // The kernel may fall back to small pages for some of them (fragmented memory): most are huge.
    expect(anonHugeBytes() - before).toBeGreaterThanOrEqual(8 * MiB);
    expect(result[16 * MiB - 1]).toBe(7);
  });
});
