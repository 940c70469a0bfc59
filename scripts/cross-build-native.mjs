#!/usr/bin/env node
/**
 * `npm run prebuild:cross -- linux-arm64 [OUT]`: builds the native kernels for another Linux
 * architecture with a cross compiler, into OUT (default native/build-<target>/), where `prepack`
 * (scripts/prebuild-native.mjs) takes them for prebuilds/<target>/. The release steps:
 *
 *   apt-get install g++-aarch64-linux-gnu      # Debian's cross compiler (and its sysroot)
 *   npm ci && npm run prebuild:cross -- linux-arm64
 *   npm pack                                   # prebuilds/linux-x64 and prebuilds/linux-arm64
 *
 * musl (Alpine) has no target: Debian ships no musl C++ toolchain. On musl the glibc binary does
 * not load, and the install builds the kernels or falls back to TypeScript, as on any platform
 * without a prebuilt binary.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The targets a Debian cross compiler exists for: the compiler, and CMake's name for the CPU. */
const CROSS_TARGETS = {
  'linux-arm64': { compiler: 'aarch64-linux-gnu-g++', processor: 'aarch64', aptPackage: 'g++-aarch64-linux-gnu' },
  'linux-x64': { compiler: 'x86_64-linux-gnu-g++', processor: 'x86_64', aptPackage: 'g++-x86-64-linux-gnu' },
};

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

function fail(message) {
  process.stderr.write(`rxccl: ${message}\n`);
  process.exit(2);
}

const target = process.argv[2];
const spec = target !== undefined && Object.hasOwn(CROSS_TARGETS, target) ? CROSS_TARGETS[target] : undefined;
if (spec === undefined) {
  fail(`cross-build-native: unknown target ${JSON.stringify(target ?? '')}; expected one of ${Object.keys(CROSS_TARGETS).join(', ')} (musl has none: Debian ships no musl C++ toolchain)`);
}
if (spawnSync(spec.compiler, ['--version']).status !== 0) {
  fail(`cross-build-native: ${spec.compiler} is not installed; on Debian: apt-get install ${spec.aptPackage}`);
}
const out = process.argv[3] ?? `native/build-${target}`;
const result = spawnSync(
  process.execPath,
  [require.resolve('cmake-js/bin/cmake-js'), 'compile', '--out', out, '--CDCMAKE_SYSTEM_NAME=Linux', `--CDCMAKE_SYSTEM_PROCESSOR=${spec.processor}`, `--CDCMAKE_CXX_COMPILER=${spec.compiler}`],
  { cwd: root, stdio: 'inherit' },
);
if (result.status !== 0) fail(`cross-build-native: the ${target} build failed (cmake-js exited with ${result.status ?? result.signal})`);
// prepack ships native/build-<target> for every target but the host's own (its native/build is that).
const shipped = process.argv[3] === undefined && target !== `${process.platform}-${process.arch}`;
process.stdout.write(`rxccl: native kernels for ${target} in ${out}/Release/rxccl_kernels.node${shipped ? ` (npm pack ships them in prebuilds/${target}/)` : ''}\n`);
