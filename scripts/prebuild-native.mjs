#!/usr/bin/env node
/**
 * Run by `prepack`: copies the native kernels built here into prebuilds/<platform>-<arch>/, and
 * those cross-built for other targets (scripts/cross-build-native.mjs, native/build-<target>/)
 * into prebuilds/<target>/, so the packed tarball carries them and a machine without cmake or a
 * compiler still gets native kernels (lib/kernels/addon.ts loads a prebuilt binary at run time).
 * The addon uses N-API 8 only, so one binary serves every Node.js from 20.19 on that platform.
 * Without a native build here it says so and packs without one (installs then build or fall
 * back). `--remove` (run by `postpack`) takes prebuilds/ away again, so a checkout keeps building
 * its own.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const ADDON = 'Release/rxccl_kernels.node';

function ship(built, target) {
  const directory = join(root, 'prebuilds', target);
  mkdirSync(directory, { recursive: true });
  copyFileSync(built, join(directory, 'rxccl_kernels.node'));
  process.stdout.write(`rxccl: prebuilt native kernels for ${target} in prebuilds/\n`);
}

rmSync(join(root, 'prebuilds'), { recursive: true, force: true });
if (!process.argv.includes('--remove')) {
  const host = `${process.platform}-${process.arch}`;
  const built = join(root, 'native/build', ADDON);
  if (existsSync(built)) ship(built, host);
  else process.stderr.write(`rxccl: warning: no ${built} to ship as a prebuilt binary; the package will build or fall back at install\n`);
  // Cross-built targets (never the host's own: its build above is the one tested here).
  for (const entry of readdirSync(join(root, 'native'))) {
    const target = /^build-(.+)$/.exec(entry)?.[1];
    if (target !== undefined && target !== host && existsSync(join(root, 'native', entry, ADDON))) ship(join(root, 'native', entry, ADDON), target);
  }
}
