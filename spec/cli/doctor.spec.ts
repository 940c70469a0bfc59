/**
 * `rxccl doctor` as a user runs it (a child process), its facts checked against the system as
 * this test finds them itself: /proc, the addon, os.networkInterfaces(), the environment given.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, symlinkSync } from 'node:fs';
import { cpus, networkInterfaces, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../lib/cli/doctor-report.js';
import { ADDON_TOO_OLD } from '../../lib/kernels/addon-facts.js';
import { ADDON_PATH, loadAddon, prebuiltAddonPath } from '../../lib/kernels/addon.js';
import { siblingReads } from '../helpers/cross-memory.js';
import { ROOT, runRxccl } from './rxccl-process.js';

const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

/**
 * `rxccl doctor --json` of the package at `root` (by default this checkout), with `env` added to
 * this process's: its exit status, its report, what it wrote on stderr.
 */
async function doctor(env: NodeJS.ProcessEnv = {}, root = ROOT): Promise<{ code: number | null; report: DoctorReport; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'bin/rxccl.mjs'), 'doctor', '--json'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  try {
    return { code, report: JSON.parse(stdout) as DoctorReport, stderr };
  } catch {
    throw new Error(`rxccl doctor --json printed no JSON (exit status ${code}): ${stderr}`);
  }
}

/** A copy of the package's sources (lib/, bin/, package.json) without the addon, sharing node_modules. */
function packageWithoutAddon(): string {
  const root = mkdtempSync(join(tmpdir(), 'rxccl-doctor-'));
  for (const entry of ['lib', 'bin', 'package.json']) cpSync(join(ROOT, entry), join(root, entry), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  return root;
}

/** A /proc setting as the test reads it, null where absent. */
function procNumber(path: string, pattern?: RegExp): number | null {
  if (!existsSync(path)) return null;
  const text = readFileSync(path, 'utf8');
  const value = pattern === undefined ? text.trim() : pattern.exec(text)?.[1];
  return value === undefined ? null : Number(value);
}

// One process at a time (a run takes a second or two of the CPU, more on a busy machine); the plain
// report is shared.
describe('rxccl doctor', { timeout: 60_000 }, () => {
  let plain: ReturnType<typeof doctor> | undefined;
  /** `rxccl doctor --json` in the test's own environment (with RXCCL_KERNEL_THREADS=3), run once. */
  const plainReport = () => (plain ??= doctor({ RXCCL_KERNEL_THREADS: '3' }));

  it('reports this process: versions, the addon it loads and what that runs, the host, as the system says', async () => {
    const { code, report, stderr } = await plainReport();
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(report.rxccl).toEqual({ version: PACKAGE.version, root: ROOT });
    expect(report.node).toEqual({ version: process.version, platform: process.platform, arch: process.arch, napi: process.versions.napi });
    const addon = loadAddon();
    expect(report.kernels).toMatchObject({ native: true, addon: join(ROOT, ADDON_PATH), origin: 'build', error: null, threads: 3 });
    expect(existsSync(report.kernels.addon!)).toBe(true);
    if (typeof addon.kernelSimd !== 'function') {
      expect(report.kernels.simd).toBe(ADDON_TOO_OLD);
    } else {
      expect(report.kernels.simd).toBe(addon.kernelSimd());
      // What the kernels run, the CPU has.
      if (process.arch === 'x64') expect(readFileSync('/proc/cpuinfo', 'utf8').split(/\s+/)).toContain(report.kernels.simd);
    }
    expect(report.resultPool.keptBytes).toBe(0);
    expect(report.resultPool.fromBytes).toBe(64 << 10);
    const hugePages = existsSync('/sys/kernel/mm/transparent_hugepage/enabled') ? /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))![1] : null;
    expect(report.resultPool.transparentHugePages).toBe(hugePages);
    expect(report.host.cpus).toBe(cpus().length);
  });

  it('says whether single copy is allowed as /proc and a real process_vm_readv say, and why', async () => {
    const { report } = await plainReport();
    const scope = procNumber('/proc/sys/kernel/yama/ptrace_scope');
    const seccomp = procNumber('/proc/self/status', /^Seccomp:\s*(\d+)/m);
    expect(report.singleCopy).toMatchObject({ setting: 'auto', yamaPtraceScope: scope, seccomp });
    expect(report.dataPlane).toMatchObject({ native: process.platform === 'linux', setting: process.platform === 'linux' ? 'auto' : 'js' });
    const system = siblingReads();
    if (report.singleCopy.refusal === null && seccomp !== null && seccomp !== 0 && (scope ?? 0) < 2) {
      // An addon built before singleCopyRefusal cannot tell what a seccomp filter allows.
      expect(report.singleCopy.allowed).toBeNull();
    } else {
      expect(report.singleCopy.allowed, `${report.singleCopy.reason} / ${system.reason}`).toBe(system.allowed);
    }
    if (scope !== null && scope >= 2) expect(report.singleCopy.reason).toContain(`ptrace_scope is ${scope}`);
  });

  it('says whether shared-memory rings are allowed as the kernel, /dev/shm and a real process_vm_readv say, and why', async () => {
    const { report } = await plainReport();
    const shm = existsSync('/dev/shm') ? statfsSync('/dev/shm') : null;
    expect(report.sharedMemory).toMatchObject({ setting: 'auto', kernel: release() });
    expect(report.sharedMemory.devShm).toEqual(shm === null ? null : { path: '/dev/shm', writable: expect.any(Boolean), bytes: shm.blocks * shm.bsize, freeBytes: expect.any(Number) });
    const [major, minor] = release().split('.').map(Number) as [number, number];
    const newEnough = major > 5 || (major === 5 && minor >= 6);
    // pidfd_getfd (Linux 5.6) takes the ring; the sender is verified as single copy verifies it.
    const system = siblingReads();
    if (report.sharedMemory.allowed !== null) expect(report.sharedMemory.allowed, report.sharedMemory.reason).toBe(process.platform === 'linux' && newEnough && system.allowed);
    if (report.sharedMemory.allowed === true) expect(report.sharedMemory.reason).toMatch(/^links between ranks of this host move every message through a ring the two share \(a memfd, named in no filesystem: \/dev\/shm is not needed\)/);
  });

  it('says single copy and shared memory are not allowed where GX1_SINGLE_COPY=off, GX1_SHARED_MEMORY=off or the JS data plane is asked for, naming the setting', async () => {
    const [off, js] = [await doctor({ GX1_SINGLE_COPY: 'off', GX1_SHARED_MEMORY: 'off' }), await doctor({ GX1_DATA_PLANE: 'js' })];
    expect(off.report.singleCopy).toMatchObject({ allowed: false, setting: 'off' });
    expect(off.report.singleCopy.reason).toMatch(/^GX1_SINGLE_COPY=off/);
    expect(off.report.sharedMemory).toMatchObject({ allowed: false, setting: 'off', reason: 'GX1_SHARED_MEMORY=off: every link keeps TCP' });
    expect(js.report.sharedMemory.allowed).toBe(false);
    expect(js.report.sharedMemory.reason).toBe('shared-memory rings are part of the native data plane, which would not run: GX1_DATA_PLANE=js');
    expect(js.report.dataPlane).toEqual({ native: false, setting: 'js', reason: 'GX1_DATA_PLANE=js' });
    expect(js.report.singleCopy.allowed).toBe(false);
    expect(js.report.singleCopy.reason).toContain('GX1_DATA_PLANE=js');
  });

  it("gives the data plane resolution's own reason where TLS makes auto js", async () => {
    const tls = (name: string) => join(ROOT, 'spec/security/fixtures/tls', name);
    const { report } = await doctor({ GX1_TLS_CERT: tls('job.pem'), GX1_TLS_KEY: tls('job.key'), GX1_TLS_CA: tls('ca.pem') });
    expect(report.dataPlane).toEqual({ native: false, setting: 'js', reason: 'TLS is set: the data links would carry the data in the clear' });
    expect(report.problems).toEqual([]);
  });

  it('lists the interfaces, and the route, rails and listeners a job here would take', async () => {
    const { report } = await plainReport();
    const system = Object.entries(networkInterfaces()).flatMap(([name, entries]) => (entries ?? []).map((entry) => ({ name, address: entry.address })));
    expect(report.network.interfaces.map(({ name, address }) => ({ name, address }))).toEqual(system);
    const loopback = system.find((entry) => entry.address === '127.0.0.1')!;
    expect(report.network.interfaces).toContainEqual(expect.objectContaining({ address: '127.0.0.1', internal: true }));
    expect(report.network).toMatchObject({
      job: null,
      // `rxccl launch` puts its coordinator on loopback, so its ranks listen there.
      route: { toward: '127.0.0.1', address: '127.0.0.1', interface: loopback.name, error: null },
      transport: 'tcp_peer',
      rails: 1,
      railOrder: 'auto',
      listen: ['127.0.0.1:0'],
      advertise: [],
    });
  });

  it("reads a rank's job, rails and rail addresses from the variables, and shows them with the secret masked", async () => {
    const env = {
      GX1_RANK: '1',
      GX1_WORLD_SIZE: '2',
      GX1_COORDINATOR: '127.0.0.1:29999',
      GX1_UNIQUE_ID: '00112233445566778899aabbccddeeff',
      GX1_SECRET: 'not-for-your-eyes',
      GX1_P2P_RAILS: '2',
      GX1_RAIL_ORDER: '1,0',
      GX1_P2P_RAIL_LISTEN_ADDRS: '127.0.0.1:0,127.0.0.2:0',
      GX1_P2P_ADVERTISE_ADDR: '127.0.0.1',
    };
    const result = await runRxccl(['doctor', '--json'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain('not-for-your-eyes');
    const report = JSON.parse(result.stdout) as DoctorReport;
    expect(report.network).toMatchObject({
      job: { launcher: 'rxccl', rank: 1, worldSize: 2, localRank: null, coordinator: '127.0.0.1:29999', hostsCoordinator: false },
      route: { toward: '127.0.0.1', address: '127.0.0.1' },
      rails: 2,
      railOrder: '1,0',
      listen: ['127.0.0.1:0', '127.0.0.2:0'],
      advertise: ['127.0.0.1'],
    });
    expect(report.environment).toMatchObject({ ...env, GX1_SECRET: '***' });
    // Every setting of the table with where it came from: these from the environment, the rest defaults.
    expect(report.settings.filter((setting) => setting.source === 'environment').map((setting) => setting.variable)).toEqual(expect.arrayContaining(Object.keys(env)));
    expect(report.settings.find((setting) => setting.variable === 'GX1_SECRET')).toEqual({ variable: 'GX1_SECRET', value: '***', source: 'environment', options: ['secret'] });
    expect(report.settings.find((setting) => setting.variable === 'GX1_P2P_RAILS')).toEqual({ variable: 'GX1_P2P_RAILS', value: '2', source: 'environment', options: ['rails'] });
    expect(report.settings.find((setting) => setting.variable === 'GX1_SPIN_US')).toEqual({ variable: 'GX1_SPIN_US', value: null, source: 'default', options: ['spinMicros'] });
    expect(report.problems).toEqual([]);
    const text = await runRxccl(['doctor'], env);
    expect(text.stdout).toContain('GX1_P2P_RAILS = 2 (environment; option rails wins)');
    expect(text.stdout).toMatch(/the other \d+ GX1_\* settings: their defaults/);
  });

  it('names configuration a job would stop on, and variables rxccl does not read, and still exits 0', async () => {
    const { code, report } = await doctor({ GX1_SINGLE_COPY: 'maybe', GX1_SHARED_MEMORY: 'ring', GX1_RIGN_ORDER: '0,1' });
    expect(code).toBe(0);
    expect(report.problems).toContain('GX1_SINGLE_COPY must be one of auto, off, got "maybe"');
    expect(report.problems).toContain('GX1_SHARED_MEMORY must be one of auto, off, got "ring"');
    expect(report.sharedMemory).toMatchObject({ allowed: false, setting: null, reason: 'GX1_SHARED_MEMORY cannot be used (see problems)' });
    expect(report.singleCopy).toMatchObject({ allowed: false, setting: null });
    expect(report.unknownVariables).toContainEqual({ name: 'GX1_RIGN_ORDER', meant: 'GX1_RING_ORDER' });
  });

  it('prints the same facts readably without --json', async () => {
    const [text, json] = [await runRxccl(['doctor'], { RXCCL_KERNEL_THREADS: '3' }), await plainReport()];
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^rxccl ${PACKAGE.version} \\(`));
    expect(text.stdout).toContain(`node          ${process.version}, ${process.platform}-${process.arch}`);
    expect(text.stdout).toContain(`addon         loaded from ${json.report.kernels.addon} (built here)`);
    expect(text.stdout).toContain(`simd          ${json.report.kernels.simd}`);
    expect(text.stdout).toContain(`single copy   ${json.report.singleCopy.allowed === true ? 'allowed' : json.report.singleCopy.allowed === false ? 'not allowed' : 'unknown'}: ${json.report.singleCopy.reason}`);
    expect(text.stdout).toContain(`shared memory ${json.report.sharedMemory.allowed === true ? 'allowed' : json.report.sharedMemory.allowed === false ? 'not allowed' : 'unknown'}: ${json.report.sharedMemory.reason}`);
    expect(text.stdout).toMatch(new RegExp(`GX1_SHARED_MEMORY auto, kernel ${release().replaceAll('.', '\\.')}, (/dev/shm (not )?writable, \\d+ MiB \\(\\d+ MiB free; not needed\\)|/dev/shm absent \\(not needed\\))`));
    expect(text.stdout).toContain(`route         to 127.0.0.1: from 127.0.0.1 on ${json.report.network.route.interface}`);
  });

  // The copies' sources are new to tsx's cache: each run transpiles the CLI afresh.
  it('reports a prebuilt addon as such, and exits 1 naming every candidate where no addon loads', { timeout: 120_000 }, async () => {
    const [bare, prebuilt] = [packageWithoutAddon(), packageWithoutAddon()];
    try {
      mkdirSync(join(prebuilt, 'prebuilds', `${process.platform}-${process.arch}`), { recursive: true });
      copyFileSync(join(ROOT, ADDON_PATH), prebuiltAddonPath(prebuilt));
      const [missing, found] = [await doctor({}, bare), await doctor({}, prebuilt)];
      const reason = `no ${join(bare, ADDON_PATH)}; no ${prebuiltAddonPath(bare)}`;
      expect(missing.code).toBe(1);
      expect(missing.stderr).toBe(`rxccl doctor: the native kernels do not load: ${reason}\n`);
      expect(missing.report.kernels).toEqual({ native: false, addon: null, origin: null, error: reason, simd: null, threads: null });
      expect(missing.report.dataPlane).toEqual({ native: false, setting: 'js', reason: 'the native addon does not load' });
      expect(found.code).toBe(0);
      expect(found.report.kernels).toMatchObject({ native: true, addon: prebuiltAddonPath(prebuilt), origin: 'prebuild' });
    } finally {
      for (const root of [bare, prebuilt]) rmSync(root, { recursive: true, force: true });
    }
  });

  it.each([
    [['doctor', '--jsn'], 'rxccl doctor: unknown option --jsn (did you mean --json?)'],
    [['doctor', 'now'], 'rxccl doctor: unexpected argument "now" (see rxccl doctor --help)'],
  ])('rxccl %j is a usage error in one line', async (args, message) => {
    const result = await runRxccl(args);
    expect(result).toMatchObject({ code: 2, stdout: '', stderr: `${message}\n` });
  });
});
