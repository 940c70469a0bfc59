import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compiledNode } from '../helpers/compiled-script.js';

/** The repository root: commands run from there, as `npm start` does. */
export const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const BIN = resolve(ROOT, 'bin/rxccl.mjs');

/**
 * How a spec starts `rxccl`: `transpiled` runs lib/cli/main.ts as bin/rxccl.mjs does in a
 * checkout, but from JavaScript transpiled ahead (spec/helpers/rxccl-cli.ts: half the start-up of
 * tsx's loader, for the command and the bench's and probe's ranks); `bin` runs bin/rxccl.mjs
 * itself, for what is about the command as installed or checked out (RXCCL_CLI, tsx's loader).
 */
export type RxcclEntry = 'transpiled' | 'bin';

function rxcclArgs(entry: RxcclEntry): string[] {
  if (entry === 'bin') return [BIN];
  const [, ...nodeArgs] = compiledNode('spec/helpers/rxccl-cli.ts');
  return nodeArgs;
}

/** A rank command that runs a TypeScript file in one process (`tsx FILE` would start two). */
export const tsNode = (file: string, ...args: string[]) => ['node', '--import', 'tsx', file, ...args];

export interface Finished {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Running {
  readonly child: ChildProcess;
  readonly finished: Promise<Finished>;
  /** Resolves with the first stdout line (e.g. the coordinator's GX1 line). */
  firstLine(): Promise<string>;
}

/** Starts `rxccl ARGS...` as a child process, the way a user's shell would (in `cwd`, default the repository root). */
export function startRxccl(args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd = ROOT, entry: RxcclEntry = 'transpiled'): Running {
  const child = spawn(process.execPath, [...rxcclArgs(entry), ...args], {
    cwd,
    env: { ...process.env, PATH: `${resolve(ROOT, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const finished = new Promise<Finished>((resolveFinished) =>
    child.once('close', (code, signal) => resolveFinished({ code, signal, stdout, stderr })),
  );
  const firstLine = () =>
    new Promise<string>((resolveLine, reject) => {
      const check = () => {
        const end = stdout.indexOf('\n');
        if (end >= 0) {
          child.stdout!.off('data', check);
          resolveLine(stdout.slice(0, end));
        }
      };
      child.stdout!.on('data', check);
      check();
      void finished.then((result) => reject(new Error(`rxccl exited (${result.code}) before printing a line: ${result.stderr}`)));
    });
  return { child, finished, firstLine };
}

export function runRxccl(args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd = ROOT, entry: RxcclEntry = 'transpiled'): Promise<Finished> {
  return startRxccl(args, env, cwd, entry).finished;
}

/** Whether a process still exists (a zombie nobody reaped counts as gone: it runs nothing). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
