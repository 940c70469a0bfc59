/**
 * The built package (dist/, as `npm run build` makes it): the CLI and a plain Node.js rank run
 * from it; its tarball installs into a fresh project on a machine without cmake and runs from
 * there; and the tslab notebook, which can only import the build, runs when Jupyter and the
 * tslab kernel are installed. dist/ is rebuilt first when any library or bench source is newer.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runRxccl } from '../cli/rxccl-process.js';

function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(directory, entry.name)) : entry.name.endsWith('.ts') ? [join(directory, entry.name)] : [],
  );
}

/** Whether some lib/**.ts or bench/collectives/*.ts has no dist/ twin, or a newer one. */
function stale(): boolean {
  return [...sources(join(ROOT, 'lib')), ...sources(join(ROOT, 'bench/collectives'))].some((source) => {
    const built = join(ROOT, 'dist', relative(ROOT, source)).replace(/\.ts$/, '.js');
    try {
      return statSync(built).mtimeMs < statSync(source).mtimeMs;
    } catch {
      return true;
    }
  });
}

/** The parts of an .ipynb file the notebook test reads and writes. */
interface Notebook {
  cells: { id?: string; source: string[]; outputs?: { text?: string[]; data?: Record<string, string | string[]> }[] }[];
}

/** This checkout's tslab (a dev dependency): the notebook runs on it, whatever kernel the machine registered. */
const TSLAB = join(ROOT, 'node_modules', '.bin', 'tslab');

/** Why the notebook cannot run here, or null. */
function notebookUnavailable(): string | null {
  const nbconvert = spawnSync('jupyter', ['nbconvert', '--version'], { encoding: 'utf8' });
  if (nbconvert.error !== undefined || nbconvert.status !== 0) return 'Jupyter is not installed (apt-get install jupyter-nbconvert python3-ipykernel jupyter-client python3-nbclient)';
  if (!existsSync(TSLAB)) return 'tslab is not installed in node_modules (npm ci)';
  return null;
}

/**
 * A Jupyter data folder whose tslab kernel is this checkout's (first on JUPYTER_PATH): a kernel
 * registered on the machine may point at another checkout, or at none.
 */
function tslabKernelPath(directory: string): string {
  const kernel = join(directory, 'kernels', 'tslab');
  mkdirSync(kernel, { recursive: true });
  writeFileSync(join(kernel, 'kernel.json'), JSON.stringify({ argv: [TSLAB, 'kernel', '--config-path', '{connection_file}'], display_name: 'TypeScript', language: 'typescript' }));
  return directory;
}

/**
 * The environment of a user whose PATH has node, npm, npx and sh (npm runs scripts with it) but
 * no cmake and no compiler: a folder of links to those alone. npm's own variables from the test
 * runner's parent are left out: they describe this checkout.
 */
function withoutCmake(work: string): NodeJS.ProcessEnv {
  const bin = join(work, 'bin');
  mkdirSync(bin);
  const npmBin = dirname(spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim());
  symlinkSync(process.execPath, join(bin, 'node'));
  symlinkSync('/bin/sh', join(bin, 'sh'));
  for (const tool of ['npm', 'npx']) symlinkSync(join(npmBin, tool), join(bin, tool));
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
  return { ...env, PATH: bin };
}

const unavailable = notebookUnavailable();
if (unavailable !== null) console.log(`skipping the notebook test: ${unavailable}`);

beforeAll(() => {
  if (!stale()) return;
  const build = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'scripts/tsconfig.package.json'], { cwd: ROOT, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
}, 120_000);

// One test at a time: the tarball and notebook tests wait in spawnSync, which holds this worker's
// event loop, so a job test run beside them could not read its ranks' output until they ended and
// timed out behind them (a full run's 60 s went by behind their 80 s under load).
describe('the built package', () => {
  it('runs a job with the built CLI and plain Node.js ranks', async () => {
    const result = await runRxccl(['launch', '-n', '2', '--', 'node', 'spec/examples/fixtures/dist-rank.mjs'], { RXCCL_CLI: 'dist' }, ROOT, 'bin');
    expect(result.stderr).not.toContain('job failed');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('[rank 0] rank 0 of 2: sum 2');
    expect(result.stdout).toContain('[rank 1] rank 1 of 2: sum 2');
  }, 60_000);

  it('installs from its tarball without cmake and runs the CLI and the bench from dist/', async ({ skip }) => {
    const work = mkdtempSync(join(tmpdir(), 'rxccl-pack-'));
    try {
      // dist/ is built above: --ignore-scripts skips prepack's second build, so its prebuilt
      // binary step (and postpack's removal) run here.
      const prebuild = (...args: string[]) => spawnSync(process.execPath, ['scripts/prebuild-native.mjs', ...args], { cwd: ROOT, encoding: 'utf8' });
      expect(prebuild().stdout).toBe(`rxccl: prebuilt native kernels for ${process.platform}-${process.arch} in prebuilds/\n`);
      const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: ROOT, encoding: 'utf8' });
      prebuild('--remove');
      expect(pack.status, pack.stderr).toBe(0);
      expect((JSON.parse(pack.stdout) as { files: { path: string }[] }[])[0]!.files.map((file) => file.path)).toContain(
        `prebuilds/${process.platform}-${process.arch}/rxccl_kernels.node`,
      );
      const tarball = join(work, (JSON.parse(pack.stdout) as { filename: string }[])[0]!.filename);
      const project = join(work, 'project');
      mkdirSync(project);
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'first-hour', private: true, type: 'module' }));
      const env = withoutCmake(work);
      const run = (command: string, args: string[]) => spawnSync(command, args, { cwd: project, env, encoding: 'utf8', timeout: 120_000 });

      // From npm's cache where it has the packages; --offline would refuse cached metadata npm
      // fetched with other headers.
      // Without running rxccl's install script (as pnpm, yarn and npm's allowScripts may).
      const install = run('npm', ['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball]);
      const unreachable = /code (ENOTCACHED|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET)/.exec(install.stderr);
      if (install.status !== 0 && unreachable !== null) {
        console.log(`skipping the tarball test: npm has rxccl's dependencies neither in its cache nor from its registry (${unreachable[1]})`);
        skip();
      }
      expect(install.status, install.stderr).toBe(0);
      // The build tools are the checkout's: an installed package does not pull them in.
      for (const tool of ['cmake-js', 'node-addon-api']) expect(existsSync(join(project, 'node_modules', tool)), tool).toBe(false);
      // The prebuilt binary loads from prebuilds/ at run time: native kernels without any script.
      const kernelBackend = () => run(process.execPath, ['--input-type=module', '-e', "console.log((await import('rxccl')).kernelBackend())"]);
      const backend = kernelBackend();
      expect(backend.stdout, backend.stderr).toBe('native\n');
      expect(existsSync(join(project, 'node_modules/rxccl/native/build'))).toBe(false);
      // The install script, run as npm would without cmake, takes the prebuilt binary and builds nothing.
      const native = run(process.execPath, ['node_modules/rxccl/scripts/install-native.mjs']);
      expect(native.status, native.stderr).toBe(0);
      expect(native.stdout).toBe(`rxccl: using the prebuilt native kernels for ${process.platform}-${process.arch}\n`);
      expect(kernelBackend().stdout).toBe('native\n');
      // Without a prebuilt binary for this platform and without cmake, the install still succeeds, on the reference kernels.
      rmSync(join(project, 'node_modules/rxccl/prebuilds'), { recursive: true, force: true });
      rmSync(join(project, 'node_modules/rxccl/native/build'), { recursive: true, force: true });
      const fallback = run(process.execPath, ['node_modules/rxccl/scripts/install-native.mjs']);
      expect(fallback.status).toBe(0);
      expect(fallback.stderr).toMatch(/^rxccl: warning: the native kernels were not built \(cmake-js is not installed\); the TypeScript reference kernels will be used/);
      expect(fallback.stderr).toContain('(npm install --no-save cmake-js@8.0.0 node-addon-api@8.9.2), then run `npm rebuild rxccl`');

      const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
      const versionRun = run('npx', ['--no-install', 'rxccl', '--version']);
      expect(versionRun.stderr).toBe('');
      expect(versionRun.stdout).toBe(`${version}\n`);
      const bench = run('npx', ['--no-install', 'rxccl', 'bench', '-n', '2', '--op', 'allreduce', '--sizes', '64', '--iters', '2', '--json']);
      expect(bench.status, bench.stderr).toBe(0);
      expect((JSON.parse(bench.stdout) as { rows: { wrong: number }[] }).rows).toMatchObject([{ wrong: 0 }]);
      // The peers' benchmarks ship in the package: each peer is measured or says in one line why not
      // (here without mpicc, and without torch where it is not installed), never for a missing file.
      const peers = run('npx', ['--no-install', 'rxccl', 'bench', '-n', '2', '--op', 'allreduce', '--sizes', '64', '--iters', '2', '--peers']);
      expect(peers.status, peers.stderr).toBe(0);
      const peerLines = (peers.stdout + peers.stderr).split('\n').filter((line) => line.startsWith('# peers: '));
      for (const peer of ['Gloo', 'Open MPI over TCP']) {
        expect(peerLines.filter((line) => line.startsWith(`# peers: ${peer} not run: `) || line.startsWith(`# peers: measuring ${peer} `)), peerLines.join('\n')).not.toHaveLength(0);
      }
      expect(peerLines.join('\n')).not.toMatch(/not run: no \S+\.(py|c)\b/);

      // rxccl/testing from dist/, with its optional peer fast-check installed beside it.
      const peer = run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', 'fast-check@4.11.0']);
      expect(peer.status, peer.stderr).toBe(0);
      const kit = run(process.execPath, [
        '--input-type=module',
        '-e',
        "const kit = await import('rxccl/testing'); const job = await kit.simulateJob({ worldSize: 3, transport: 'tcp_peer' }, async (s) => Array.from(await s.allReduce(Int32Array.of(s.rank)))); console.log(typeof kit.memoryJob, JSON.stringify(job.ranks.map((r) => r.value)));",
      ]);
      expect(kit.status, kit.stderr).toBe(0);
      expect(kit.stdout).toBe('function [[3],[3],[3]]\n');

      // TypeScript in the user's project, strictest library checks, no DOM lib (a Node.js
      // project): rxccl's declarations and those it pulls in (IxJS) compile, then it runs as a job.
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { target: 'ES2022', module: 'nodenext', lib: ['ES2023'], strict: true, skipLibCheck: false, noEmit: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] },
          files: ['train.ts'],
        }),
      );
      writeFileSync(
        join(project, 'train.ts'),
        [
          "import { openSession, type RankSession } from 'rxccl';",
          'const session: RankSession = await openSession();',
          'const sum: Float32Array = await session.allReduce(Float32Array.of(session.rank + 1));',
          "if (session.rank === 0) await session.send(1, 7, Int32Array.of(42));",
          "else for await (const message of session.messages(0, 7, { dtype: 'i32', count: 1 })) { console.log(`rank 1 got ${message[0]}`); break; }",
          'console.log(`rank ${session.rank} sum ${sum[0]}`);',
          'await session.close();',
          '',
        ].join('\n'),
      );
      const typecheck = run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.']);
      expect(typecheck.stdout + typecheck.stderr).toBe('');
      expect(typecheck.status).toBe(0);
      const trained = run('npx', ['--no-install', 'rxccl', 'launch', '-n', '2', '--', process.execPath, '--import', join(ROOT, 'node_modules/tsx/dist/esm/index.mjs'), 'train.ts']);
      expect(trained.status, trained.stderr).toBe(0);
      expect(trained.stdout).toContain('[rank 1] rank 1 got 42');
      expect(trained.stdout).toContain('[rank 0] rank 0 sum 3');
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 180_000);

  it.skipIf(unavailable !== null)(`executes examples/notebook.ipynb, its job-opening cell twice as a re-run does${unavailable === null ? '' : ` (skipped: ${unavailable})`}`, () => {
    const directory = mkdtempSync(join(tmpdir(), 'rxccl-notebook-'));
    const input = join(ROOT, 'examples', `.notebook-rerun-${process.pid}.ipynb`);
    try {
      // One kernel runs every cell, the job-opening one twice in a row: a re-run must close the
      // job it opened before and open a new one, not collide with it ("rank 0 joined twice").
      const notebook = JSON.parse(readFileSync(join(ROOT, 'examples/notebook.ipynb'), 'utf8')) as Notebook;
      const opening = notebook.cells.findIndex((cell) => cell.source.join('').includes('await closeJob(job);\n\nconst worldSize'));
      expect(opening, 'the job-opening cell').toBeGreaterThan(0);
      notebook.cells.splice(opening + 1, 0, { ...notebook.cells[opening]!, id: 'opening-again' });
      // Beside the original: the kernel starts in the notebook's folder, and it imports ../dist.
      writeFileSync(input, JSON.stringify(notebook));
      const run = spawnSync(
        'jupyter',
        ['nbconvert', '--to', 'notebook', '--execute', '--ExecutePreprocessor.timeout=60', input, '--output-dir', directory, '--output', 'executed.ipynb'],
        { cwd: ROOT, encoding: 'utf8', timeout: 90_000, env: { ...process.env, JUPYTER_PATH: tslabKernelPath(join(directory, 'jupyter')) } },
      );
      expect(run.status, run.stderr).toBe(0);
      const outputs = (JSON.parse(readFileSync(join(directory, 'executed.ipynb'), 'utf8')) as Notebook).cells.flatMap((cell) => cell.outputs ?? []);
      const printed = outputs.map((output) => (output.text ?? []).join('')).join('');

      const jobs = [...printed.matchAll(/job ([0-9a-f]{32}) on 127\.0\.0\.1:\d+: 4 ranks joined/g)].map((match) => match[1]);
      expect(jobs, 'both runs of the opening cell opened a job').toHaveLength(2);
      expect(jobs[0]).not.toBe(jobs[1]);
      expect(printed).not.toMatch(/joined twice/);

      expect(printed.match(/'10, 100'/g)).toHaveLength(4);
      for (let rank = 0; rank < 4; rank += 1) expect(printed).toContain(`pipeline rank ${rank}: averaged steps 2.5, 5, 7.5`);
      expect(printed).toContain('rank 0 received 103 from rank 3');
      expect(printed).toContain('rank 2 received 101 from rank 1');

      const svg = outputs.map((output) => output.data?.['image/svg+xml']).find((data) => data !== undefined);
      const chart = Array.isArray(svg) ? svg.join('') : (svg ?? '');
      expect(chart).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      expect(chart).toContain('<polyline');
      expect(chart.match(/<circle /g)).toHaveLength(5);
      expect(printed).toMatch(/measured 5 sizes: 4096 B [\d.]+ MB\/s/);

      // rxccl/tfjs: the same losses on 1 and 2 ranks, falling, and the two pictures.
      const epochs = [...printed.matchAll(/epoch (\d): loss (\S+) on 1 rank, (\S+) on 2 ranks/g)];
      expect(epochs.map((match) => Number(match[1]))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      for (const [, , one, two] of epochs) expect(Math.abs(Number(one) - Number(two)) / Number(one)).toBeLessThan(1e-4);
      expect(Number(epochs[7]![2])).toBeLessThan(Number(epochs[0]![2]) / 10);
      const svgs = outputs.map((output) => output.data?.['image/svg+xml']).flatMap((data) => (data === undefined ? [] : [Array.isArray(data) ? data.join('') : data]));
      expect(svgs.find((picture) => picture.includes('training loss'))?.match(/<polyline/g)).toHaveLength(2);
      expect(svgs.find((picture) => picture.includes('collectives per rank'))?.match(/<rect /g)?.length).toBeGreaterThan(100);

      // Whichever rank of the all-reduce a rank compared rank 3's descriptor with comes first (the
      // mesh's arrival order decides, on the relay's hub or a leaf).
      const mismatch = 'collective sequence \\d+ mismatch: rank [012] submitted \\{AllReduce F32 .*\\}, rank 3 submitted \\{Broadcast F32 root 0 .*\\}';
      // tcp_peer: the ranks that found it say PROTOCOL, the others relay it from a peer, or (a rank
      // with no link to one that found it: links open on demand) from the coordinator.
      for (let rank = 0; rank < 4; rank += 1) {
        expect(printed).toMatch(new RegExp(`rank ${rank}: (PROTOCOL|REMOTE_ABORT: (direct peer rank \\d+|collective coordinator aborted: rank \\d+) aborted): ${mismatch}`));
      }
      expect(printed).toMatch(new RegExp(`coordinator: REMOTE_ABORT: collective coordinator aborted: rank \\d+ aborted: ${mismatch}`));
      expect(printed).toContain('after the failure, barrier(): REMOTE_ABORT');
      expect(printed).toContain('job closed');
    } finally {
      rmSync(input, { force: true });
      rmSync(directory, { recursive: true, force: true });
    }
  }, 120_000);
});
