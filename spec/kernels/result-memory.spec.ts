/**
 * Fresh results (native/result_memory.h, result_pool.h, result_mapping.h,
 * lib/kernels/result-memory.ts; docs/architecture.md "Fresh results"): from 64 KiB a result is a
 * mapping of its own, exactly as long as asked, from 4 MiB in 2 MiB pages where transparent huge
 * pages allow, counted as external memory, and kept in the pool once the collector frees it, for
 * the next result of about its size; the pool's thread makes mappings of a size just asked for
 * ahead, within bounds, and ends; below, an ordinary typed array.
 */
import { readFileSync } from 'node:fs';
import { constants as perfConstants, PerformanceObserver } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../lib/kernels/addon.js';
import { freshResult, releaseResults, resultAllocator } from '../../lib/kernels/result-memory.js';
import { collect, resultFillerRunning as fillerRunning, settleExternalMemory } from '../helpers/collector.js';

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

/** Waits, polling, until `done` holds (at most `ms`); whether it did. */
async function until(done: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return true;
}

/** The address space a result of `bytes` maps (native/result_mapping.cc MappedLength), from 4 MiB. */
const mappedHuge = (bytes: number) => Math.ceil(bytes / (2 * MiB)) * 2 * MiB + 2 * MiB;

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
  it('makes a mapping of a size the pool has none of left ahead, on a thread of its own that then ends: the next result of that size takes it, zero', async () => {
    await settleExternalMemory();
    releaseResults();
    await until(() => !fillerRunning());
    const bytes = 33 * MiB + 1; // a size nothing kept here fits
    const before = addon.resultPoolBytes();
    const first = freshResult(bytes);
    expect(await until(() => addon.resultPoolBytes() >= before + mappedHuge(bytes))).toBe(true);
    expect(await until(() => !fillerRunning())).toBe(true);
    const ready = addon.resultPoolBytes();
    const next = freshResult(bytes);
    // Taken from the pool (and, none left, one more asked for, which the thread makes meanwhile).
    expect(addon.resultPoolBytes()).toBe(ready - mappedHuge(bytes));
    expect(next.byteLength).toBe(bytes);
    expect(next.every((byte) => byte === 0)).toBe(true);
    first.fill(1);
    expect(await until(() => addon.resultPoolBytes() === ready && !fillerRunning())).toBe(true);
  });

  it('makes at most one mapping ahead per size, within the pool bound, for results the caller keeps (the collector cannot free them); releaseResults gives every kept mapping back', async () => {
    // Nothing an earlier test dropped left to come back to the pool meanwhile.
    await settleExternalMemory();
    releaseResults();
    await until(() => !fillerRunning());
    // Twelve kept at once: each Take takes the one made ahead and asks for another, never more.
    const held = Array.from({ length: 12 }, () => freshResult(5 * MiB + 7));
    expect(await until(() => !fillerRunning())).toBe(true);
    expect(addon.resultPoolBytes()).toBeLessThanOrEqual(mappedHuge(5 * MiB + 7));
    // Eight sizes of 24-31 MiB kept at once: at most one ahead of each, and the pool's bound (256 MiB) over all.
    const sizes = Array.from({ length: 8 }, (_, index) => (24 + index) * MiB + 1);
    held.push(...sizes.map((bytes) => freshResult(bytes)));
    expect(await until(() => !fillerRunning())).toBe(true);
    expect(addon.resultPoolBytes()).toBeLessThanOrEqual(Math.min(256 * MiB, mappedHuge(5 * MiB + 7) + sizes.reduce((sum, bytes) => sum + mappedHuge(bytes), 0)));
    expect(addon.resultPoolBytes()).toBeGreaterThan(mappedHuge(24 * MiB));
    expect(held.every((result, index) => result.byteLength === (index < 12 ? 5 * MiB + 7 : (index - 12 + 24) * MiB + 1))).toBe(true);
    releaseResults();
    expect(addon.resultPoolBytes()).toBe(0);
    // It fills again from the next result.
    freshResult(5 * MiB + 7);
    expect(await until(() => addon.resultPoolBytes() >= mappedHuge(5 * MiB + 7))).toBe(true);
    releaseResults();
    expect(await until(() => !fillerRunning())).toBe(true);
    expect(addon.resultPoolBytes()).toBe(0);
  });

  it('frees dropped results by scavenges as they add up (32 MiB of them), and their mappings come back to the pool while the loop runs', async () => {
    await settleExternalMemory();
    const minor = { count: 0 };
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) minor.count++;
    });
    observer.observe({ entryTypes: ['gc'] });
    const before = process.memoryUsage().external;
    let most = 0;
    let hits = 0;
    try {
      for (let call = 0; call < 256; call++) {
        const pooled = addon.resultPoolBytes();
        freshResult(MiB)[MiB - 1] = 1;
        if (addon.resultPoolBytes() < pooled) hits++;
        most = Math.max(most, process.memoryUsage().external - before);
        // A collective's turn of the event loop (the finalizers that give mappings back run there).
        await new Promise((resolve) => setImmediate(resolve));
      }
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      observer.disconnect();
    }
    // 256 MiB of results: a scavenge per 32 MiB of them. Without, none, and external memory grows
    // past 64 MiB before a full collection starts (measured: 0 scavenges, 3 full, 65 MiB at most;
    // with: 7 scavenges, no full collection, 33-39 MiB alone, 61 MiB once beside another spec file
    // on the 2 loaded cores, where a scavenge came late). The scavenges' count tells the two apart;
    // the bound says memory stays under the full collection's threshold.
    expect(minor.count).toBeGreaterThanOrEqual(4);
    expect(most).toBeLessThan(64 * MiB);
    expect(hits).toBeGreaterThanOrEqual(128);
  });
});
