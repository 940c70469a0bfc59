#!/usr/bin/env node
/**
 * The package's `install` script: builds the native reduction kernels with cmake-js, and when
 * that is not possible here (no cmake, no C++ compiler, a failed build) says so in one warning
 * and exits 0, so that `npm install` never fails for it: rxccl then runs on its TypeScript
 * reference kernels (lib/kernels), only slower. `npm test` still insists on the addon where it
 * was built (spec/kernels/backend.spec.ts).
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const cmakeJs = createRequire(import.meta.url).resolve('cmake-js/bin/cmake-js');
const build = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'native/build'], { cwd: root, encoding: 'utf8' });

if (build.status === 0) {
  process.stdout.write(build.stdout);
} else {
  // The build's own output is long; its last error line says why (e.g. "CMake executable is not found").
  const output = `${build.stdout ?? ''}${build.stderr ?? ''}`;
  const reason = build.error?.message ?? output.split('\n').map((line) => line.replace(/^(ERR!|ERROR)\s+(OMG\s+)?/, '').replace(/\.$/, '').trim()).filter((line) => line.length > 0).at(-1) ?? `cmake-js exited with ${build.status}`;
  process.stderr.write(
    `rxccl: warning: the native kernels were not built (${reason}); the TypeScript reference kernels will be used (slower). ` +
      'To build them, install cmake and a C++17 compiler (Debian: apt-get install cmake g++ make), then run `npm rebuild rxccl`.\n',
  );
}
