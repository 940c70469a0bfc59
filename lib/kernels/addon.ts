/**
 * Finding and loading the native kernels (native/ built by cmake-js on `npm install`, or prebuilt
 * in a packed package's prebuilds/), and the TypeScript view of their entry points
 * (native/addon.cc). Offsets and counts are in elements; a kernel runs synchronously when `done`
 * is omitted, else on a worker thread.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigurationError, KernelError } from '../errors.js';
import type { DataPlaneEngine } from '../transport/data-plane.js';

/** Where cmake-js puts the addon, relative to the package root. */
export const ADDON_PATH = 'native/build/Release/rxccl_kernels.node';

/** Called on the JS thread when a queued kernel finishes; `ran` is false when it was cancelled first. */
export type KernelDone = (error: Error | null, ran: boolean) => void;

declare const cancelTokenBrand: unique symbol;
/** Returned for a queued kernel; pass it to cancel(). */
export interface CancelToken {
  readonly [cancelTokenBrand]: true;
}

/** Each kernel returns a CancelToken when given `done`, else runs before returning undefined. */
export interface KernelAddon {
  reduceSlices(dtype: number, op: number, input: Uint8Array, inputOffset: number, count: number, slices: number, output: Uint8Array, outputOffset: number, done?: KernelDone): CancelToken | undefined;
  /** output[0 .. count) = op over `sources` (each `count` elements), folded left; avg divides by `divisor`. */
  reduceSpans(dtype: number, op: number, sources: readonly Uint8Array[], output: Uint8Array, count: number, divisor: number, done?: KernelDone): CancelToken | undefined;
  accumulate(dtype: number, op: number, accumulator: Uint8Array, accumulatorOffset: number, source: Uint8Array, sourceOffset: number, count: number, done?: KernelDone): CancelToken | undefined;
  divide(dtype: number, data: Uint8Array, offset: number, count: number, divisor: number, done?: KernelDone): CancelToken | undefined;
  /** Stops a queued kernel from starting; does nothing once it has started or finished. */
  cancel(token: CancelToken): void;
  /** Threads one large kernel is split across ($RXCCL_KERNEL_THREADS, else the CPU count). */
  kernelThreads(): number;
  /** sched_yield(): gives the core to another runnable thread, if any (lib/transport/busy-window.ts). */
  yieldCpu(): void;
  /** The spin each of these waits (us) had under the data plane's spin policy, `spinUs` -1 adaptive (native/spin_budget.h); for tests. */
  spinBudgetTrace(spinUs: number, waitsUs: Float64Array): Float64Array;
  /** Makes every later ring this process's planes are offered be refused as if pidfd_getfd failed with `errno` (0: no longer); for tests. Absent from an addon built before it. */
  failSharedMemoryJoins?(errno: number): void;
  /**
   * Replays `steps` on one shared-memory ring (native/shared_memory_ring.h) in this process's
   * memory, writer and reader alike: a write answers whether its slot was taken (false: the ring is
   * full or the last payload's fragments are still due), "fragment" whether the next fragment due
   * went (null: none is due), a read the next entry (null: none), an expect step the same or the
   * text of what is wrong with it, a sleep whether that side may sleep. For the ring's property test.
   * Absent from an addon built before it.
   */
  sharedMemoryRingTrace?(steps: readonly SharedMemoryRingStep[]): (boolean | SharedMemoryRingRead | string | null)[];
  /**
   * An ArrayBuffer of exactly `bytes` for a fresh result, in a mapping of its own: one the pool
   * keeps ready (a freed result's, its old bytes; or one made ahead, zero), else a new one (zero;
   * from 4 MiB in huge pages); undefined below 64 KiB or where mapping fails
   * (native/result_memory.h).
   */
  allocateResult(bytes: number): ArrayBuffer | undefined;
  /** Bytes of mappings the addon keeps ready for results: freed ones, and those made ahead (native/result_pool.h). */
  resultPoolBytes(): number;
  /** Unmaps every mapping the pool keeps (native/result_pool.h Release). Absent from an addon built before it. */
  releaseResultPool?(): void;
  /**
   * The vector instructions the kernel loops run on this CPU: `avx2`, `sse2`, `avx512f`, `neon`...
   * (native/kernel_simd.h). Absent from an addon built before it.
   */
  kernelSimd?(): string;
  /**
   * Why this process cannot take part in single copy, '' where it can as far as it alone decides:
   * pidfd_open and process_vm_readv tried on itself, which a seccomp filter may refuse
   * (native/single_copy.h). Absent from an addon built before it.
   */
  singleCopyRefusal?(): string;
  /** The native data plane's engine (native/data_plane_entry.cc; lib/transport/data-plane.ts). */
  DataPlane: DataPlaneEngine;
}

/** A step of `sharedMemoryRingTrace`: a message written (its payload in the slot up to 8 KiB), the next read, or a side asking to sleep. */
export type SharedMemoryRingStep =
  /** A message; `bySingleCopy`: its link's receiver reads payloads of single copy's size in place. */
  | { readonly header: Uint8Array; readonly payload: Uint8Array; readonly bySingleCopy?: boolean }
  /** The next entry taken as a data link's reader takes it, expecting a message of `payloadBytes` or a fragment of that many bytes. */
  | { readonly expect: 'message' | 'fragment'; readonly payloadBytes: number; readonly bySingleCopy?: boolean }
  | 'fragment'
  | 'read'
  | 'reader sleeps'
  | 'writer sleeps';

/**
 * An entry `sharedMemoryRingTrace` read: a message (its header, where its payload is: all in its
 * slot, on the socket, or its first part in its slot and the rest in fragments; its length) or a
 * fragment (no header, its length); and the payload bytes its slot holds.
 */
export interface SharedMemoryRingRead {
  readonly header?: Uint8Array;
  readonly where: 'slot' | 'socket' | 'slots' | 'fragment';
  readonly payloadBytes: number;
  readonly payload: Uint8Array;
}

/**
 * The directory holding this package's package.json. This file runs from lib/kernels/ (tsx,
 * vitest) or dist/lib/kernels/ (after `npm run build`), so the root is found by walking up.
 */
export function packageRoot(start: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let directory = start; ; directory = dirname(directory)) {
    if (existsSync(join(directory, 'package.json'))) return directory;
    if (dirname(directory) === directory) throw new Error(`no package.json above ${start}`);
  }
}

/**
 * Where a packed package carries the addon prebuilt for a platform (scripts/prebuild-native.mjs),
 * as node-gyp-build lays them out: `prebuilds/<platform>-<arch>/`. N-API only, so one binary
 * serves every Node.js of that platform.
 */
export function prebuiltAddonPath(root: string = packageRoot(), platform: string = process.platform, arch: string = process.arch): string {
  return join(root, 'prebuilds', `${platform}-${arch}`, 'rxccl_kernels.node');
}

/**
 * Loads the addon at `path`, or by default this package's (`loadPackagedAddon`). Throws with the
 * reason when it does not load.
 */
export function loadAddon(path?: string): KernelAddon {
  return path === undefined ? loadPackagedAddon() : (createRequire(import.meta.url)(path) as KernelAddon);
}

/**
 * The addon of the package at `root`: its own build (a checkout, or an install whose script built
 * it), else the prebuilt one for this platform, so an install without scripts (`--ignore-scripts`,
 * pnpm, yarn, npm's `allowScripts`) still gets native kernels. Throws with each candidate's
 * reason when none loads.
 */
export function loadPackagedAddon(root: string = packageRoot()): KernelAddon {
  return locatePackagedAddon(root).addon;
}

/** Where the addon `loadPackagedAddon` loads came from: the package's own `build`, or a `prebuild`. */
export type AddonOrigin = 'build' | 'prebuild';

/** `loadPackagedAddon`'s addon, with the file it loaded and where that file came from. */
export function locatePackagedAddon(root: string = packageRoot()): { addon: KernelAddon; path: string; origin: AddonOrigin } {
  const reasons: string[] = [];
  const candidates = [
    { path: join(root, ADDON_PATH), origin: 'build' },
    { path: prebuiltAddonPath(root), origin: 'prebuild' },
  ] as const;
  for (const { path, origin } of candidates) {
    if (!existsSync(path)) {
      reasons.push(`no ${path}`);
      continue;
    }
    try {
      return { addon: loadAddon(path), path, origin };
    } catch (error) {
      reasons.push(`${path}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    }
  }
  throw new Error(reasons.join('; '));
}

/** Rethrows an addon exception as the RxcclError its `code` names. */
export function rethrowNativeError(error: unknown): never {
  if (error instanceof Error && 'code' in error) {
    if (error.code === 'KERNEL') throw new KernelError(error.message);
    if (error.code === 'INVALID_CONFIGURATION') throw new ConfigurationError(error.message);
  }
  throw error;
}

/**
 * The native data plane's engine, when this process can run it: the addon is built and loads (the
 * engine is part of it) and the platform has what it uses (eventfd, poll: Linux); else null.
 */
export function dataPlaneEngine(load: () => KernelAddon = loadAddon): DataPlaneEngine | null {
  if (process.platform !== 'linux') return null;
  try {
    const engine = load().DataPlane;
    return typeof engine === 'function' ? engine : null;
  } catch {
    return null;
  }
}

/** The addon's `yieldCpu` where the addon loads, else null (a busy window then does not run). */
export function yieldCpu(load: () => KernelAddon = loadAddon): (() => void) | null {
  try {
    const addon = load();
    return typeof addon.yieldCpu === 'function' ? () => addon.yieldCpu() : null;
  } catch {
    return null;
  }
}
