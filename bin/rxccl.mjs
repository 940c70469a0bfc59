#!/usr/bin/env node
/**
 * The `rxccl` command. It runs the CLI in this process (no wrapper child: signals reach the
 * launcher directly, and there is one process fewer to orphan) from one of two places:
 *
 * - a source checkout (lib/cli/main.ts next to this file, not under node_modules, and tsx
 *   installed, as the devDependency it is): tsx's loader is registered in-process and the
 *   TypeScript sources run as they are, so the command always matches the sources and needs no
 *   build step;
 * - otherwise the build, dist/lib/cli/main.js (`npm run build`). An installed package always runs
 *   its build, even where its project happens to have tsx: the package ships lib/ only for its
 *   source maps.
 *
 * Sources win over a build that is present too in a checkout: a stale dist/ must never shadow
 * what a developer edits. RXCCL_CLI=dist forces the build (to try the built CLI in a checkout).
 */
import { existsSync } from 'node:fs';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const sources = new URL('../lib/cli/main.ts', import.meta.url);
const built = new URL('../dist/lib/cli/main.js', import.meta.url);
const installed = fileURLToPath(import.meta.url).split(sep).includes('node_modules');

async function loadCli() {
  if (process.env.RXCCL_CLI !== 'dist' && !installed && existsSync(sources)) {
    const tsx = await import('tsx/esm/api').catch(() => null);
    if (tsx !== null) {
      tsx.register();
      return import(sources.href);
    }
  }
  if (existsSync(built)) return import(built.href);
  process.stderr.write('rxccl: the CLI is not built: run `npm run build` (or install tsx to run it from the sources)\n');
  process.exit(2);
}

const { runCli } = await loadCli();
// exitCode rather than exit(): the last output lines must reach a pipe before the process ends.
process.exitCode = await runCli(process.argv.slice(2));
