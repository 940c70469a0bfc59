/**
 * Backend choice: `npm test` requires the native addon wherever it was built (set
 * RXCCL_ALLOW_REFERENCE_KERNELS=1 to run the suite on the reference kernels instead), and a
 * failed load falls back to the reference kernels with one warning.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { chooseBackend } from '../../lib/kernels/active-backend.js';
import { ADDON_PATH, loadAddon, loadPackagedAddon, packageRoot, prebuiltAddonPath } from '../../lib/kernels/addon.js';
import type { KernelCall } from '../../lib/kernels/calls.js';
import { kernelBackend } from '../../lib/kernels/index.js';
import { referenceBackend } from '../../lib/kernels/reference-backend.js';

describe('kernel backend', () => {
  it.skipIf(process.env.RXCCL_ALLOW_REFERENCE_KERNELS === '1')(
    'is native (build it with `npm install`, or set RXCCL_ALLOW_REFERENCE_KERNELS=1)',
    () => {
      expect(kernelBackend()).toBe('native');
      expect(existsSync(join(packageRoot(), ADDON_PATH))).toBe(true);
    },
  );

  it('finds the package root from the source and the built layout', () => {
    const root = packageRoot();
    expect(existsSync(join(root, 'package.json'))).toBe(true);
    expect(packageRoot(join(root, 'lib', 'kernels'))).toBe(root);
    expect(packageRoot(join(root, 'dist', 'lib', 'kernels'))).toBe(root);
  });

  it('falls back to the reference kernels with one warning naming the reason', () => {
    const warn = vi.fn();
    const backend = chooseBackend(() => loadAddon('/nonexistent/rxccl_kernels.node'), warn);
    expect(backend).toBe(referenceBackend);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toMatch(/native reduction kernels did not load \(Cannot find module '\/nonexistent\/rxccl_kernels.node'/);
  });

  it.skipIf(kernelBackend() !== 'native')('loads a package whose only addon is the prebuilt one for this platform; names every candidate when none loads', () => {
    // Two packages: Node caches a module by its path, so one cannot serve both cases.
    const [good, broken] = [mkdtempSync(join(tmpdir(), 'rxccl-prebuilt-')), mkdtempSync(join(tmpdir(), 'rxccl-prebuilt-'))];
    try {
      for (const root of [good, broken]) mkdirSync(dirname(prebuiltAddonPath(root)), { recursive: true });
      copyFileSync(join(packageRoot(), ADDON_PATH), prebuiltAddonPath(good));
      expect(typeof loadPackagedAddon(good).reduceSlices).toBe('function');
      writeFileSync(prebuiltAddonPath(broken), 'not an ELF');
      expect(() => loadPackagedAddon(broken)).toThrow(new RegExp(`^no ${join(broken, ADDON_PATH)}; ${prebuiltAddonPath(broken)}: .*(invalid ELF header|file too short)`));
    } finally {
      for (const root of [good, broken]) rmSync(root, { recursive: true, force: true });
    }
  });

  it.skipIf(kernelBackend() !== 'native')('uses the addon when it loads, silently', () => {
    const warn = vi.fn();
    expect(chooseBackend(() => loadAddon(), warn).name).toBe('native');
    expect(warn).not.toHaveBeenCalled();
  });
});

describe('reference backend scheduling', () => {
  const call = (data: Uint8Array): KernelCall => ({ kind: 'divide', dtype: 'u8', data, divisor: 2, count: data.length });

  it('runs a started call on a later turn of the event loop', async () => {
    const data = new Uint8Array([8, 9]);
    const done = new Promise<Error | null>((resolve) => referenceBackend.start(call(data), resolve));
    expect(Array.from(data)).toEqual([8, 9]);
    expect(await done).toBeNull();
    expect(Array.from(data)).toEqual([4, 4]);
  });

  it('cancels a call that has not started', async () => {
    const data = new Uint8Array([8]);
    const done = vi.fn();
    referenceBackend.start(call(data), done)();
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).not.toHaveBeenCalled();
    expect(Array.from(data)).toEqual([8]);
  });
});
