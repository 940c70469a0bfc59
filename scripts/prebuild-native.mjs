#!/usr/bin/env node
/**
 * Run by `prepack`: copies the native kernels built here into prebuilds/<platform>-<arch>/, so the
 * packed tarball carries them and a machine without cmake or a compiler still gets native kernels
 * (scripts/install-native.mjs takes a prebuilt binary that loads before it tries to build). The
 * addon uses N-API 8 only, so one binary serves every Node.js from 20.19 on that platform. Without
 * a native build here it says so and packs without one (installs then build or fall back).
 * `--remove` (run by `postpack`) takes prebuilds/ away again, so a checkout keeps building its own.
 */
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = join(root, 'native/build/Release/rxccl_kernels.node');
rmSync(join(root, 'prebuilds'), { recursive: true, force: true });
if (process.argv.includes('--remove')) {
  // Done: only the tarball carries them.
} else if (!existsSync(built)) {
  process.stderr.write(`rxccl: warning: no ${built} to ship as a prebuilt binary; the package will build or fall back at install\n`);
} else {
  const target = join(root, 'prebuilds', `${process.platform}-${process.arch}`);
  mkdirSync(target, { recursive: true });
  copyFileSync(built, join(target, 'rxccl_kernels.node'));
  process.stdout.write(`rxccl: prebuilt native kernels for ${process.platform}-${process.arch} in prebuilds/\n`);
}
