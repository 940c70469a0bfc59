/**
 * The import-graph check (`npm run layers`, .dependency-cruiser.cjs) bites where it should: run with
 * the repository's own rules over a tiny tree of the same folders, it reports a library module
 * importing from bench/ (even a type-only import), bench/ and examples/ importing from the folders
 * they may not know, and circles outside lib/ too; and it is run over every source folder.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const CRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

/** The tree: the cycle of issue #29 (the CLI typing itself from the bench that runs the CLI), and more. */
const FIXTURE: Record<string, string> = {
  'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
  'lib/errors.ts': 'export class RxcclError extends Error {}\n',
  'lib/index.ts': "export { RxcclError } from './errors.js';\n",
  'lib/cli/main.ts': "import { RxcclError } from '../errors.js';\nimport { benchCommand } from './bench-command.js';\nexport const runCli = (): unknown => [RxcclError, benchCommand];\n",
  'lib/cli/bench-command.ts': "import type { BenchOptions } from '../../bench/collectives/run.js';\nexport const benchCommand = (options: BenchOptions): BenchOptions => options;\n",
  'bench/collectives/run.ts': "import { runCli } from '../../lib/cli/main.js';\nexport interface BenchOptions { sizes?: number[] }\nexport const run = runCli;\n",
  'bench/collectives/uses-spec.ts': "import { job } from '../../spec/helpers/job.js';\nexport const twice = [job, job];\n",
  'examples/allreduce.ts': "import { RxcclError } from '../lib/index.js';\nimport { run } from '../bench/collectives/run.js';\nexport const uses = [RxcclError, run];\n",
  'spec/helpers/job.ts': "import { RxcclError } from '../../lib/index.js';\nexport const job = RxcclError;\n",
  // spec/ may import anything but itself in a cycle.
  'spec/bench.spec.ts': "import { run } from '../bench/collectives/run.js';\nimport { uses } from '../examples/allreduce.js';\nimport { job } from './helpers/job.js';\nexport const all = [run, uses, job];\n",
  'scripts/build.mjs': "import { step } from './step.mjs';\nexport const build = () => step();\n",
  'scripts/step.mjs': "import { build } from './build.mjs';\nexport const step = () => build;\n",
};

interface Violation {
  readonly from: string;
  readonly to: string;
  readonly rule: { readonly name: string };
  readonly cycle?: readonly { readonly name: string }[];
}

interface CruiseResult {
  readonly modules: readonly { readonly source: string; readonly couldNotResolve?: boolean }[];
  readonly summary: { readonly violations: readonly Violation[] };
}

function cruise(tree: string): CruiseResult {
  for (const [path, text] of Object.entries(FIXTURE)) {
    mkdirSync(dirname(join(tree, path)), { recursive: true });
    writeFileSync(join(tree, path), text);
  }
  // Exits 1 with violations; the JSON report is on stdout either way.
  const run = spawnSync(process.execPath, [CRUISE, 'lib', 'bench', 'examples', 'scripts', 'spec', '--config', CONFIG, '--output-type', 'json'], {
    cwd: tree,
    encoding: 'utf8',
  });
  if (run.stdout === '') throw new Error(`dependency-cruiser printed nothing: ${run.stderr}`);
  return JSON.parse(run.stdout) as CruiseResult;
}

describe('the import-graph check', () => {
  const tree = mkdtempSync(join(tmpdir(), 'rxccl-import-graph-'));
  let result: CruiseResult;
  let violations: readonly Violation[];
  beforeAll(() => {
    result = cruise(tree);
    violations = result.summary.violations;
  });
  afterAll(() => rmSync(tree, { recursive: true, force: true }));
  const ofRule = (name: string) => violations.filter((violation) => violation.rule.name === name);

  it('cruises every module of the tree, .mjs included, and resolves every import', () => {
    // A set: dependency-cruiser may list an .mjs module twice, as a root and as an unfollowed import.
    expect([...new Set(result.modules.map((module) => module.source))].sort()).toEqual(
      Object.keys(FIXTURE)
        .filter((path) => path !== 'tsconfig.json')
        .sort(),
    );
    expect(result.modules.filter((module) => module.couldNotResolve === true)).toEqual([]);
  });

  it('reports lib/ importing from bench/, a type-only import too', () => {
    expect(ofRule('no-upward-import-out-of-lib').map(({ from, to }) => [from, to])).toEqual([['lib/cli/bench-command.ts', 'bench/collectives/run.ts']]);
  });

  it('reports bench/ importing from spec/, and examples/ from bench/', () => {
    expect(ofRule('no-import-from-bench-into-spec-or-examples').map(({ from, to }) => [from, to])).toEqual([['bench/collectives/uses-spec.ts', 'spec/helpers/job.ts']]);
    expect(ofRule('no-import-from-examples-into-spec-or-bench').map(({ from, to }) => [from, to])).toEqual([['examples/allreduce.ts', 'bench/collectives/run.ts']]);
  });

  it('reports the circle through bench/ and lib/, and one among scripts/', () => {
    const circles = ofRule('no-circular').map(({ from, cycle }) => [from, ...(cycle ?? []).map(({ name }) => name)].sort());
    expect(circles).toContainEqual(['bench/collectives/run.ts', 'bench/collectives/run.ts', 'lib/cli/bench-command.ts', 'lib/cli/main.ts'].sort());
    expect(circles.some((circle) => circle.includes('scripts/build.mjs') && circle.includes('scripts/step.mjs'))).toBe(true);
    expect(circles.every((circle) => circle.every((module) => /^(lib|bench|scripts)\//.test(module)))).toBe(true);
  });

  it('reports nothing else: spec/ may import from every folder, the others from lib/', () => {
    const known = new Set(['no-circular', 'no-upward-import-out-of-lib', 'no-import-from-bench-into-spec-or-examples', 'no-import-from-examples-into-spec-or-bench']);
    expect(violations.filter((violation) => !known.has(violation.rule.name))).toEqual([]);
    expect(violations.filter((violation) => violation.from.startsWith('spec/'))).toEqual([]);
  });
});

describe('npm run layers', () => {
  it('cruises every folder of the repository that holds source files', () => {
    const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.layers!;
    const cruised = new Set(script.split(/\s+/).slice(1, script.split(/\s+/).indexOf('--config')));
    const sources = execFileSync('git', ['ls-files', '--', '*.ts', '*.mts', '*.cts', '*.js', '*.mjs', '*.cjs'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((path) => path.includes('/'))
      .map((path) => path.split('/')[0]!);
    expect([...new Set(sources)].filter((folder) => !cruised.has(folder))).toEqual([]);
    expect([...cruised]).toEqual(expect.arrayContaining(['lib', 'bench', 'bin', 'examples', 'scripts', 'spec']));
  });
});
