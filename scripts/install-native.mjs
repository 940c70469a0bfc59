#!/usr/bin/env node
/**
 * The package's `install` script. A packed package carries prebuilt kernels for the platform it
 * was packed on (prebuilds/<platform>-<arch>, scripts/prebuild-native.mjs): when one is there and
 * loads here, nothing is built (the package loads it from there, with or without this script). Otherwise the native reduction kernels
 * are built with cmake-js, and when that is not possible here (cmake-js and node-addon-api not
 * installed: they are development dependencies, which an installed package does not bring; no
 * cmake, no C++ compiler, a failed build) it says so in one warning and exits 0, so that `npm install` never fails for it:
 * rxccl then runs on its TypeScript reference kernels (lib/kernels), only slower. `npm test`
 * still insists on the addon where it was built (spec/kernels/backend.spec.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

/**
 * Whether the prebuilt binary for this platform is there and loads here (a glibc too old, say, and
 * it does not). The package loads it from prebuilds/ at run time (lib/kernels/addon.ts), so an
 * install that skips this script gets it too; here it only spares a build.
 */
function usePrebuilt() {
  const prebuilt = join(root, 'prebuilds', `${process.platform}-${process.arch}`, 'rxccl_kernels.node');
  if (!existsSync(prebuilt)) return false;
  try {
    require(prebuilt);
  } catch (error) {
    process.stderr.write(`rxccl: the prebuilt native kernels do not load here (${String(error.message).split('\n')[0]}); building them\n`);
    return false;
  }
  process.stdout.write(`rxccl: using the prebuilt native kernels for ${process.platform}-${process.arch}\n`);
  return true;
}

/** The build tools, where installed: a checkout's development dependencies, or what the user added to build from source. */
function cmakeJs() {
  try {
    return require.resolve('cmake-js/bin/cmake-js');
  } catch {
    return null;
  }
}

/** Builds the kernels with cmake-js; when that cannot be done here, says why and goes on without them. */
function build() {
  const tool = cmakeJs();
  if (tool === null) return notBuilt('cmake-js is not installed');
  const result = spawnSync(process.execPath, [tool, 'compile', '--out', 'native/build'], { cwd: root, encoding: 'utf8' });
  if (result.status === 0) {
    process.stdout.write(result.stdout);
    return;
  }
  // The build's own output is long; its last error line says why (e.g. "CMake executable is not found").
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  notBuilt(result.error?.message ?? output.split('\n').map((line) => line.replace(/^(ERR!|ERROR)\s+(OMG\s+)?/, '').replace(/\.$/, '').trim()).filter((line) => line.length > 0).at(-1) ?? `cmake-js exited with ${result.status}`);
}

function notBuilt(reason) {
  const { devDependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const tools = ['cmake-js', 'node-addon-api'].map((name) => `${name}@${devDependencies[name]}`).join(' ');
  process.stderr.write(
    `rxccl: warning: the native kernels were not built (${reason}); the TypeScript reference kernels will be used (slower). ` +
      'To build them, install cmake and a C++17 compiler (Debian: apt-get install cmake g++ make) and the build tools ' +
      `(npm install --no-save ${tools}), then run \`npm rebuild rxccl\`.\n`,
  );
}

if (!usePrebuilt()) build();
