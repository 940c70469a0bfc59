import { type ChildProcess, spawn } from 'node:child_process';
import { prefixLines } from './line-prefixer.js';
import { parseRankErrorLine } from './rank-error-line.js';
import type { SharedOutput } from './shared-output.js';

/** How a rank's process ended. */
export type RankExit =
  | { readonly kind: 'exited'; readonly code: number }
  | { readonly kind: 'signalled'; readonly signal: NodeJS.Signals }
  | { readonly kind: 'not-started'; readonly reason: string };

export function describeExit(exit: RankExit): string {
  switch (exit.kind) {
    case 'exited':
      return `exited with code ${exit.code}`;
    case 'signalled':
      return `was killed by ${exit.signal}`;
    case 'not-started':
      return `could not start: ${exit.reason}`;
  }
}

export interface RankProcessOptions {
  readonly rank: number;
  /** How its output lines and the launcher's messages name it (default `rank N`; `replacement K` for a process joining a running job). */
  readonly label?: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly stdout: SharedOutput;
  readonly stderr: SharedOutput;
}

/**
 * One rank's process, started as the leader of its own process group so that signals reach
 * everything it started (`tsx` runs the script in a child of its own; a shell runs pipelines):
 * killing only the leader would leave those orphaned. Its output goes line by line, prefixed with
 * `[rank N] `, to the launcher's stdout and stderr; the last rxccl error line on its stderr
 * (`rxccl: CODE: message`) is kept as why it failed.
 */
export class RankProcess {
  /** Settles when the process has ended (its output may still be draining). */
  readonly exited: Promise<RankExit>;
  /** Settles when its stdout and stderr have been passed on completely. */
  readonly drained: Promise<void>;
  private exit: RankExit | null = null;
  private lastError: string | null = null;

  private constructor(
    readonly rank: number,
    /** `rank N`, or `replacement K`: how its lines and messages name it. */
    readonly label: string,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise<RankExit>((resolve) => {
      child.once('exit', (code, signal) => resolve(signal !== null ? { kind: 'signalled', signal } : { kind: 'exited', code: code ?? 0 }));
      // Without a pid the process never existed (command not found, not executable): no exit event.
      child.once('error', (error) => {
        if (child.pid === undefined) resolve({ kind: 'not-started', reason: error.message });
      });
    }).then((exit) => (this.exit = exit));
    this.drained = new Promise<void>((resolve) => child.once('close', () => resolve()));
  }

  static start(options: RankProcessOptions): RankProcess {
    const child = spawn(options.command, options.args, {
      env: options.env,
      // Ranks do not read the terminal: a background process group that did would be stopped.
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const label = options.label ?? `rank ${options.rank}`;
    const prefix = `[${label}] `;
    options.stdout.add(child.stdout!.pipe(prefixLines(prefix)));
    const stderr = child.stderr!.pipe(prefixLines(prefix));
    options.stderr.add(stderr);
    const rank = new RankProcess(options.rank, label, child);
    // The prefixer passes on whole lines only, each starting with the prefix.
    stderr.on('data', (chunk: Buffer) => {
      // Most of a rank's stderr is not an error line: only a chunk holding one is split and parsed.
      if (!chunk.includes('rxccl: ')) return;
      for (const line of chunk.toString('utf8').split('\n')) rank.lastError = parseRankErrorLine(line.slice(prefix.length)) ?? rank.lastError;
    });
    return rank;
  }

  /** `CODE: message` of the last rxccl error line the rank printed (complete once `drained`), else null. */
  get errorLine(): string | null {
    return this.lastError;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exit === null;
  }

  /**
   * Signals the rank's whole process group: also after the leader ended, to reach what it left
   * behind. A group that no longer exists is not an error.
   */
  signal(signal: NodeJS.Signals): void {
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }

  /**
   * Resolves once nothing of the rank's process group is left (polled: a SIGKILL is delivered when
   * its target next runs, which on a busy machine is after `kill` returned), or after `limitMs`.
   * Killed grandchildren are reaped by init; where nothing reaps orphans (a launcher that is itself
   * PID 1 without an init) their zombies keep the group until `limitMs`.
   */
  async groupGone(limitMs: number): Promise<void> {
    const pid = this.child.pid;
    if (pid === undefined) return;
    const until = Date.now() + limitMs;
    while (Date.now() < until) {
      try {
        process.kill(-pid, 0);
      } catch {
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Stops waiting for output that a process which escaped the group may still hold open. */
  abandonOutput(): void {
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
  }
}
