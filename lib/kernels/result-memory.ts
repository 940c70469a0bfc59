import { loadAddon, type KernelAddon } from './addon.js';

/**
 * Memory for a collective's fresh result (docs/architecture.md, "Fresh results"): from 4 MiB, the
 * addon's own mapping in 2 MiB huge pages (native/result_memory.h: on a virtual machine a fresh
 * typed array of megabytes costs a page fault per 4 KiB on its first write, more than the
 * collective itself), else, and where the addon does not load or the mapping fails, an ordinary
 * zeroed Uint8Array. Either way the caller owns a plain typed array over an ArrayBuffer, freed by
 * the collector.
 */
export function freshResult(bytes: number): Uint8Array {
  // Most results are small: they cost no call into the addon (which would decline them anyway).
  if (bytes < HUGE_RESULT_BYTES) return new Uint8Array(bytes);
  if (allocate === undefined) allocate = hugeAllocator(loadAddon);
  const mapped = allocate?.(bytes);
  return mapped === undefined ? new Uint8Array(bytes) : new Uint8Array(mapped);
}

/** The size from which the addon maps a result in huge pages (native/result_memory.h kHugeResultBytes). */
export const HUGE_RESULT_BYTES = 4 << 20;

type Allocate = (bytes: number) => ArrayBuffer | undefined;

/** The addon's allocator, looked up once (null, and never again, where it does not load); undefined before. */
let allocate: Allocate | null | undefined;

/** The addon's `allocateResult` where the addon loads, else null. */
export function hugeAllocator(load: () => KernelAddon): Allocate | null {
  try {
    const addon = load();
    return typeof addon.allocateResult === 'function' ? (bytes) => addon.allocateResult(bytes) : null;
  } catch {
    return null;
  }
}
