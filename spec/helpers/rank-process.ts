/**
 * Ranks as child processes (SCRIPT transpiled ahead, spec/helpers/compiled-script.ts, run by
 * `node` with ARGS) with the GX1_* environment the launcher sets, for the specs. Every spawned
 * process is tracked, so a test can kill whatever is left (`killAll`) and prove none is (`isAlive`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { afterEach, expect } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { compiledNode } from './compiled-script.js';

/** The repository root (children run there). */
export const REPOSITORY_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface RankProcessOptions {
  /** `host:port` of the coordinator. */
  readonly coordinator: string;
  readonly uniqueId: string;
  readonly rank: number;
  readonly worldSize: number;
  readonly timeoutMs?: number;
  /** More environment variables (they override the GX1_* ones). */
  readonly env?: Readonly<Record<string, string>>;
  /** Script path relative to the repository root. */
  readonly script: string;
  readonly args?: readonly string[];
}

export interface RankProcess {
  readonly rank: number;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Every stdout line so far. */
  readonly lines: string[];
  /** stderr, for failure messages. */
  stderr(): string;
  /** Resolves with the first stdout line (past or future) that matches. Rejects if the process exits first. */
  waitFor(pattern: RegExp): Promise<string>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const tracked = new Set<RankProcess>();

/** Every process spawned and not yet known to have exited. */
export function liveProcesses(): RankProcess[] {
  return [...tracked];
}

export function spawnRank(options: RankProcessOptions): RankProcess {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GX1_COORDINATOR: options.coordinator,
    GX1_UNIQUE_ID: options.uniqueId,
    GX1_RANK: String(options.rank),
    GX1_WORLD_SIZE: String(options.worldSize),
    ...(options.timeoutMs === undefined ? {} : { GX1_TIMEOUT_MS: String(options.timeoutMs) }),
    ...options.env,
  };
  // Vitest's own variables would make a child think it runs under a test worker.
  for (const name of Object.keys(env)) if (name.startsWith('VITEST')) delete env[name];
  const [, ...nodeArgs] = compiledNode(options.script, ...(options.args ?? []));
  const child = spawn(process.execPath, nodeArgs, {
    cwd: REPOSITORY_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let errors = '';
  const watchers: { pattern: RegExp; resolve: (line: string) => void; reject: (error: Error) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const watcher of [...watchers]) {
      if (watcher.pattern.test(line)) {
        watchers.splice(watchers.indexOf(watcher), 1);
        watcher.resolve(line);
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    errors += chunk.toString('utf8');
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  const handle: RankProcess = {
    rank: options.rank,
    pid: child.pid!,
    child,
    lines,
    stderr: () => errors,
    waitFor(pattern) {
      const seen = lines.find((line) => pattern.test(line));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<string>((resolve, reject) => watchers.push({ pattern, resolve, reject }));
    },
    exited,
  };
  tracked.add(handle);
  void exited.then(({ code, signal }) => {
    tracked.delete(handle);
    for (const watcher of watchers.splice(0)) {
      watcher.reject(
        new Error(`rank ${options.rank} (pid ${handle.pid}) exited (code ${code}, signal ${signal}) before printing ${watcher.pattern}\n` + `stdout:\n${lines.join('\n')}\nstderr:\n${errors}`),
      );
    }
  });
  return handle;
}

/** Whether a process with this pid exists (a reaped child does not). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** SIGKILLs every tracked process still running and waits until each has exited. */
export async function killAll(): Promise<void> {
  const live = liveProcesses();
  for (const rank of live) {
    try {
      rank.child.kill('SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await Promise.all(live.map((rank) => rank.exited));
}

/** The parsed value of the child's `RESULT name json` line. */
export function resultOf(rank: RankProcess, name: string): unknown {
  const line = rank.lines.find((candidate) => candidate.startsWith(`RESULT ${name} `));
  if (line === undefined) throw new Error(`rank ${rank.rank} printed no RESULT ${name}; stdout:\n${rank.lines.join('\n')}\nstderr:\n${rank.stderr()}`);
  return JSON.parse(line.slice(`RESULT ${name} `.length)) as unknown;
}

/**
 * Drops this worker's GX1_* variables: the children inherit its environment (spawnRank, the
 * launcher), and a variable of the caller's (a data plane, an algorithm, a timeout) would change
 * what every job of the spec file runs. Call it once, at the file's top.
 */
export function forgetCallerSettings(): void {
  for (const name of Object.keys(process.env)) if (name.startsWith('GX1_')) delete process.env[name];
}

/**
 * What a spec file's jobs leave after each test, cleaned up: every rank process killed (and
 * checked gone: a rank left behind fails the test that spawned it) and every coordinator closed.
 * Push what a test starts onto the lists returned.
 */
export function cleanUpJobsAfterEach(): { readonly coordinators: Coordinator[]; readonly spawned: RankProcess[] } {
  const coordinators: Coordinator[] = [];
  const spawned: RankProcess[] = [];
  afterEach(async () => {
    await killAll();
    for (const rank of spawned.splice(0)) expect(isAlive(rank.pid), `rank ${rank.rank} (pid ${rank.pid}) left behind`).toBe(false);
    await Promise.all(coordinators.splice(0).map((coordinator) => coordinator.close()));
  });
  return { coordinators, spawned };
}

/** What `startProcessJob` runs: `script SCENARIO` on every rank, with this session timeout and extra environment. */
export interface ProcessJobOptions {
  readonly script: string;
  readonly scenario: string;
  readonly transport: CollectiveTransport;
  readonly timeoutMs: number;
  readonly env?: Record<string, string>;
  /** A fault-tolerant job (the coordinator's `faultTolerant`, GX1_FAULT_TOLERANT=1 for every rank): it survives losing a rank. */
  readonly faultTolerant?: boolean;
}

/**
 * A coordinator in this process and `worldSize` rank processes of one job, registered with the
 * lists of `cleanUpJobsAfterEach` so that the test's end kills and checks them.
 */
export async function startProcessJob(
  cleanup: ReturnType<typeof cleanUpJobsAfterEach>,
  worldSize: number,
  options: ProcessJobOptions,
): Promise<{ coordinator: Coordinator; ranks: RankProcess[] }> {
  const uniqueId = UniqueId.random();
  const { transport, timeoutMs } = options;
  const faultTolerant = options.faultTolerant === true;
  const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize, collectiveTimeoutMs: timeoutMs, transport, ...(faultTolerant ? { faultTolerant } : {}) });
  cleanup.coordinators.push(coordinator);
  const ranks = Array.from({ length: worldSize }, (_, rank) =>
    spawnRank({
      script: options.script,
      args: [options.scenario],
      coordinator: `127.0.0.1:${coordinator.address.port}`,
      uniqueId: uniqueId.toHex(),
      rank,
      worldSize,
      timeoutMs,
      env: { GX1_COLLECTIVE_TRANSPORT: transport, ...(faultTolerant ? { GX1_FAULT_TOLERANT: '1' } : {}), ...options.env },
    }),
  );
  cleanup.spawned.push(...ranks);
  return { coordinator, ranks };
}

/** A rank process as a failing test shows it: its pid, its output lines and its stderr. */
export function describeRank(rank: RankProcess): string {
  return `rank ${rank.rank} (pid ${rank.pid})\nstdout:\n${rank.lines.join('\n')}\nstderr:\n${rank.stderr()}`;
}

/** Waits for every rank of a job to exit, and checks each exited 0 and none is left. */
export async function expectAllExitedCleanly(ranks: readonly RankProcess[]): Promise<void> {
  const exits = await Promise.all(ranks.map((rank) => rank.exited));
  exits.forEach((exit, rank) => expect(exit, describeRank(ranks[rank]!)).toEqual({ code: 0, signal: null }));
  expect(liveProcesses()).toEqual([]);
}

/** The JSON a rank printed after `prefix ` on a line of its own, or undefined. */
export function printedJson<T>(rank: RankProcess, prefix: string): T | undefined {
  const line = rank.lines.find((candidate) => candidate.startsWith(`${prefix} `));
  return line === undefined ? undefined : (JSON.parse(line.slice(prefix.length + 1)) as T);
}
