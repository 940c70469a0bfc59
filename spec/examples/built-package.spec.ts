/**
 * The built package (dist/, as `npm run build` makes it): the CLI and a plain Node.js rank run
 * from it, and the tslab notebook, which can only import the build, runs when Jupyter and the
 * tslab kernel are installed. dist/ is rebuilt first when any library source is newer.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runRxccl } from '../cli/rxccl-process.js';

function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(directory, entry.name)) : entry.name.endsWith('.ts') ? [join(directory, entry.name)] : [],
  );
}

/** Whether some lib/**.ts has no dist/lib/**.js, or a newer one. */
function stale(): boolean {
  return sources(join(ROOT, 'lib')).some((source) => {
    const built = join(ROOT, 'dist', relative(ROOT, source)).replace(/\.ts$/, '.js');
    try {
      return statSync(built).mtimeMs < statSync(source).mtimeMs;
    } catch {
      return true;
    }
  });
}

/** Why the notebook cannot run here, or null. */
function notebookUnavailable(): string | null {
  const kernels = spawnSync('jupyter', ['kernelspec', 'list', '--json'], { encoding: 'utf8' });
  if (kernels.error !== undefined || kernels.status !== 0) return 'Jupyter is not installed (apt-get install jupyter-nbconvert python3-ipykernel jupyter-client python3-nbclient)';
  const specs = (JSON.parse(kernels.stdout) as { kernelspecs: Record<string, unknown> }).kernelspecs;
  if (!('tslab' in specs)) return 'the tslab kernel is not registered (npx tslab install --python=/usr/bin/python3)';
  return null;
}

const unavailable = notebookUnavailable();
if (unavailable !== null) console.log(`skipping the notebook test: ${unavailable}`);

beforeAll(() => {
  if (!stale()) return;
  const build = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
}, 120_000);

describe.concurrent('the built package', () => {
  it('runs a job with the built CLI and plain Node.js ranks', async () => {
    const result = await runRxccl(['launch', '-n', '2', '--', 'node', 'spec/examples/fixtures/dist-rank.mjs'], { RXCCL_CLI: 'dist' });
    expect(result.stderr).not.toContain('job failed');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('[rank 0] rank 0 of 2: sum 2');
    expect(result.stdout).toContain('[rank 1] rank 1 of 2: sum 2');
  }, 60_000);

  it.skipIf(unavailable !== null)(`executes examples/notebook.ipynb${unavailable === null ? '' : ` (skipped: ${unavailable})`}`, () => {
    const directory = mkdtempSync(join(tmpdir(), 'rxccl-notebook-'));
    try {
      const run = spawnSync(
        'jupyter',
        ['nbconvert', '--to', 'notebook', '--execute', '--ExecutePreprocessor.timeout=60', 'examples/notebook.ipynb', '--output-dir', directory, '--output', 'executed.ipynb'],
        { cwd: ROOT, encoding: 'utf8', timeout: 90_000 },
      );
      expect(run.status, run.stderr).toBe(0);
      const notebook = JSON.parse(readFileSync(join(directory, 'executed.ipynb'), 'utf8')) as {
        cells: { outputs?: { text?: string[] }[] }[];
      };
      const printed = notebook.cells.flatMap((cell) => cell.outputs ?? []).map((output) => (output.text ?? []).join('')).join('');
      expect(printed).toMatch(/allReduce sum/);
      expect(printed.match(/'10, 100'/g)).toHaveLength(4);
      expect(printed).toContain('job complete: every rank agreed and left');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }, 120_000);
});
