import { loadAddon, type KernelAddon } from './addon.js';

/**
 * Memory for a collective's fresh result (docs/architecture.md, "Fresh results"): from 64 KiB, a
 * mapping of the addon's own, recycled once the collector frees the result (native/result_memory.h,
 * result_pool.h: on a virtual machine a fresh typed array costs a page fault per 4 KiB on its first
 * write, ten times the collective at 1 MiB), in 2 MiB huge pages from 4 MiB; else, and where the
 * addon does not load or mapping fails, an ordinary Uint8Array. Either way the caller owns a plain
 * typed array over an ArrayBuffer, freed by the collector. Its bytes are unspecified (a recycled
 * mapping holds what a freed result left there): the collective writes every one of them.
 */
export function freshResult(bytes: number): Uint8Array {
  // Most results are small: they cost no call into the addon (which would decline them anyway).
  if (bytes < POOLED_RESULT_BYTES) return new Uint8Array(bytes);
  if (allocate === undefined) allocate = resultAllocator(loadAddon);
  const mapped = allocate?.(bytes);
  return mapped === undefined ? new Uint8Array(bytes) : new Uint8Array(mapped);
}

/** The size from which results come from the addon's mappings (native/result_memory.h kPooledResultBytes). */
export const POOLED_RESULT_BYTES = 64 << 10;

type Allocate = (bytes: number) => ArrayBuffer | undefined;

/** The addon's allocator, looked up once (null, and never again, where it does not load); undefined before. */
let allocate: Allocate | null | undefined;

/** The addon's `allocateResult` where the addon loads, else null. */
export function resultAllocator(load: () => KernelAddon): Allocate | null {
  try {
    const addon = load();
    return typeof addon.allocateResult === 'function' ? (bytes) => addon.allocateResult(bytes) : null;
  } catch {
    return null;
  }
}
