/**
 * Which kernels this process uses, decided once on first use: the native addon when it loads,
 * else the TypeScript reference with a single warning on stderr (the package keeps working, only
 * slower). `npm test` insists on the addon wherever it was built (spec/kernels/backend.spec.ts).
 */
import { loadAddon, type KernelAddon } from './addon.js';
import type { KernelBackend } from './backend.js';
import { nativeBackend } from './native-backend.js';
import { referenceBackend } from './reference-backend.js';

let active: KernelBackend | undefined;

export function activeBackend(): KernelBackend {
  active ??= chooseBackend(loadAddon, (message) => process.emitWarning(message, { code: 'RXCCL_REFERENCE_KERNELS' }));
  return active;
}

/** The native backend from `load`, or the reference one after telling `warn` why. */
export function chooseBackend(load: () => KernelAddon, warn: (message: string) => void): KernelBackend {
  try {
    return nativeBackend(load());
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    warn(
      `rxccl: the native reduction kernels did not load (${reason}); using the TypeScript reference ` +
        'kernels, which are correct but many times slower. Build them with `npm rebuild rxccl` ' +
        '(needs cmake and a C++17 compiler).',
    );
    return referenceBackend;
  }
}
