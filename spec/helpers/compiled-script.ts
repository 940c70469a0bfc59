/**
 * Child processes of the specs (ranks, fixtures) run from JavaScript transpiled ahead rather than
 * under `node --import tsx`. tsx's loader hooks run on a thread of their own and every module
 * hops there and back: a rank importing lib/index.ts spends about 1 s of CPU before its first
 * line, against 0.45 s from JavaScript, and the process specs start hundreds of ranks two
 * cores share. The transpile is tsx's own (its esbuild, with the repository's tsconfig, names
 * kept), so a child runs the same code; an inline source map keeps its stack traces on the .ts
 * lines.
 *
 * The JavaScript mirrors the sources' layout under .cache/spec-children/ in the repository, so
 * that relative imports, node_modules and the package root (lib/kernels/addon.ts walks up to
 * package.json) resolve as from the sources. A file is transpiled again when its source is newer;
 * one no longer in the sources is removed, so a child can never import what was deleted.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** tsx's own esbuild (a dependency of tsx, not of this package), found from tsx wherever npm put it. */
const { transformSync } = createRequire(createRequire(import.meta.url).resolve('tsx'))('esbuild') as typeof import('esbuild');

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const OUT = join(ROOT, '.cache', 'spec-children');
/** What a child can import: everything but the spec files themselves (vitest runs those). */
const SOURCE_DIRECTORIES = ['lib', 'spec', 'bench', 'examples'];

let mirrored = false;

/** Every .ts file under `directory` but *.spec.ts, as paths relative to the root. */
function sourcesUnder(directory: string): string[] {
  return readdirSync(join(ROOT, directory), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts') && !file.endsWith('.d.ts'))
    .map((file) => join(directory, file));
}

const outputOf = (source: string) => join(OUT, source.replace(/\.ts$/, '.js'));

function modifiedMs(path: string): number | null {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

/** Brings .cache/spec-children/ up to date with the sources (once per test file's process). */
function mirrorSources(): void {
  if (mirrored) return;
  const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
  const sources = SOURCE_DIRECTORIES.flatMap(sourcesUnder);
  for (const source of sources) {
    const path = join(ROOT, source);
    const output = outputOf(source);
    const built = modifiedMs(output);
    if (built !== null && built >= statSync(path).mtimeMs) continue;
    const { code } = transformSync(readFileSync(path, 'utf8'), {
      loader: 'ts',
      format: 'esm',
      target: `node${process.versions.node}`,
      sourcemap: 'inline',
      sourcefile: path,
      keepNames: true,
      tsconfigRaw: { compilerOptions: tsconfig.compilerOptions },
    });
    mkdirSync(dirname(output), { recursive: true });
    // Whole or not at all: another test file's process may be reading it.
    const partial = `${output}.${process.pid}.partial`;
    writeFileSync(partial, code);
    renameSync(partial, output);
  }
  const expected = new Set(sources.map(outputOf));
  for (const file of readdirSync(OUT, { recursive: true, encoding: 'utf8' })) {
    const output = join(OUT, file);
    if (file.endsWith('.js') && !expected.has(output)) rmSync(output);
  }
  mirrored = true;
}

/**
 * The command that runs `script` (a .ts path relative to the repository root, or absolute) with
 * `args` as a child: `node --enable-source-maps <its JavaScript> ...args`.
 */
export function compiledNode(script: string, ...args: string[]): string[] {
  mirrorSources();
  const source = relative(ROOT, resolve(ROOT, script));
  return ['node', '--enable-source-maps', outputOf(source), ...args];
}
