import { type AddonOrigin, dataPlaneEngine, type KernelAddon, locatePackagedAddon } from './addon.js';

/** What an addon built before an entry point says for it (`rxccl doctor` still runs). */
export const ADDON_TOO_OLD = 'unknown (addon too old)';

/** What this process's native addon is and can do (`rxccl doctor`), asked of the addon itself. */
export interface AddonFacts {
  /** Whether the addon loads: the kernels are native, else the TypeScript reference. */
  readonly loaded: boolean;
  /** The file loaded; null where none did. */
  readonly path: string | null;
  /** `build` (this package's own, compiled on install or in a checkout) or `prebuild` (prebuilds/). */
  readonly origin: AddonOrigin | null;
  /** Why no addon loaded (every candidate's reason); null where one did. */
  readonly error: string | null;
  /** The vector instructions the kernels run (`avx2`, `sse2`, `neon`...), ADDON_TOO_OLD, or null unloaded. */
  readonly simd: string | null;
  /** Threads one large kernel splits across (RXCCL_KERNEL_THREADS, else the CPU count). */
  readonly kernelThreads: number | null;
  /** Bytes of freed results the addon keeps to hand out again. */
  readonly resultPoolBytes: number | null;
  /** Whether the native data plane's engine runs here (the addon loads, on Linux). */
  readonly dataPlane: boolean;
  /**
   * The addon's `singleCopyRefusal()`: '' where this process may take part in single copy as far
   * as it alone decides, else why not; null unloaded or where the addon is too old to say.
   */
  readonly singleCopyRefusal: string | null;
}

/** The facts of the addon `locate` finds (by default this package's, as the kernels load it). */
export function addonFacts(locate: () => ReturnType<typeof locatePackagedAddon> = locatePackagedAddon): AddonFacts {
  let found: ReturnType<typeof locatePackagedAddon>;
  try {
    found = locate();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { loaded: false, path: null, origin: null, error: reason, simd: null, kernelThreads: null, resultPoolBytes: null, dataPlane: false, singleCopyRefusal: null };
  }
  const { addon, path, origin } = found;
  return {
    loaded: true,
    path,
    origin,
    error: null,
    simd: typeof addon.kernelSimd === 'function' ? addon.kernelSimd() : ADDON_TOO_OLD,
    kernelThreads: addon.kernelThreads(),
    resultPoolBytes: addon.resultPoolBytes(),
    dataPlane: dataPlaneEngine((): KernelAddon => addon) !== null,
    singleCopyRefusal: typeof addon.singleCopyRefusal === 'function' ? addon.singleCopyRefusal() : null,
  };
}
