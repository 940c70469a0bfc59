import { loadAddon, type KernelAddon } from './addon.js';

/**
 * Memory for a collective's fresh result (docs/architecture.md, "Fresh results"): from 64 KiB, a
 * mapping of the addon's own, ready before it is asked for (native/result_pool.h: a freed result's,
 * or one a thread of the addon's made ahead; on a virtual machine a fresh typed array costs a page
 * fault per 4 KiB on its first write, ten times the collective at 1 MiB), in 2 MiB huge pages from
 * 4 MiB; else, and where the addon does not load or mapping fails, an ordinary Uint8Array. Either
 * way the caller owns a plain typed array over an ArrayBuffer, freed by the collector. Its bytes
 * are unspecified (a recycled mapping holds what a freed result left there): the collective writes
 * every one of them.
 */
export function freshResult(bytes: number): Uint8Array {
  // Most results are small: they cost no call into the addon (which would decline them anyway).
  if (bytes < POOLED_RESULT_BYTES) return new Uint8Array(bytes);
  if (addon === undefined) addon = resultAddon(loadAddon);
  const mapped = addon?.allocateResult(bytes);
  return mapped === undefined ? new Uint8Array(bytes) : new Uint8Array(mapped);
}

/**
 * Gives back to the kernel the mappings the addon keeps ready for results (a world session's
 * close): none stays mapped for a process that has closed its session. Results still held return
 * to the pool when the collector frees them, and the pool fills again from the next fresh result.
 */
export function releaseResults(): void {
  // Where no result came from the addon, it keeps none. (An addon built before this lacks it.)
  addon?.releaseResultPool?.();
}

/** The size from which results come from the addon's mappings (native/result_memory.h kPooledResultBytes). */
export const POOLED_RESULT_BYTES = 64 << 10;

/** The addon, looked up at the first large result (null, and never again, where it does not load); undefined before. */
let addon: KernelAddon | null | undefined;

/** The addon where it loads and allocates results, else null. */
function resultAddon(load: () => KernelAddon): KernelAddon | null {
  try {
    const loaded = load();
    return typeof loaded.allocateResult === 'function' ? loaded : null;
  } catch {
    return null;
  }
}

/** The addon's `allocateResult` where the addon loads, else null. */
export function resultAllocator(load: () => KernelAddon): ((bytes: number) => ArrayBuffer | undefined) | null {
  const loaded = resultAddon(load);
  return loaded === null ? null : (bytes) => loaded.allocateResult(bytes);
}
