import { type ChildProcess, fork } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { EpochOrder, FromRank, Tally } from './messages.js';
import type { Resources } from './resources.js';

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** What a wait for a rank process's next message can end with instead. */
export type Silence = 'exited' | 'timeout';

type Message = Exclude<FromRank, { kind: 'progress' }>;

/** The driver's handle on one rank process (worker.ts): its messages in order of arrival, and its exit. */
export class RankProcess {
  /** The latest counts it sent in the current epoch (a killed rank cannot report them at its end). */
  progress: Tally | null = null;
  private readonly child: ChildProcess;
  private readonly inbox: Message[] = [];
  private readonly exit: Promise<unknown>;
  private wake: (() => void) | null = null;

  private constructor(readonly slot: number) {
    // `node --import tsx`, one process: `tsx worker.ts` would put a second process between the
    // driver and the rank, and a SIGKILL to it would leave the rank running.
    // Its output goes to the driver's stderr: the driver's stdout is its report (JSON with --json).
    this.child = fork(WORKER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 2, 2, 'ipc'] });
    this.child.on('message', (message: FromRank) => {
      if (message.kind === 'progress') this.progress = message.tally;
      else this.inbox.push(message);
      this.wake?.();
    });
    this.exit = new Promise((resolve) => this.child.once('exit', resolve));
    void this.exit.then(() => this.wake?.());
  }

  /** Forks the rank process of `slot`; resolves with it and what it held before its first session. */
  static async fork(slot: number): Promise<{ rank: RankProcess; resources: Resources }> {
    const rank = new RankProcess(slot);
    const hello = await rank.next(60_000);
    if (typeof hello === 'string' || hello.kind !== 'hello') throw new Error(`the rank process of slot ${slot} did not start (${typeof hello === 'string' ? hello : hello.kind})`);
    return { rank, resources: hello.resources };
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Whether a message waits to be read. */
  get hasNews(): boolean {
    return this.inbox.length > 0;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  order(order: EpochOrder): void {
    this.progress = null;
    this.child.send(order);
  }

  /** Its next message, unless it exits or `timeoutMs` passes first. */
  async next(timeoutMs: number): Promise<Message | Silence> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = this.inbox.shift();
      if (message !== undefined) return message;
      if (!this.running) return 'exited';
      if (Date.now() >= deadline) return 'timeout';
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  /** SIGKILL, and the wait for the process to be gone. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exit;
  }

  /**
   * Closes its IPC channel, after which a process whose sessions released everything has nothing
   * left to run and exits; true if it did within `timeoutMs` (else it is killed).
   */
  async release(timeoutMs: number): Promise<boolean> {
    if (this.child.connected) this.child.disconnect();
    const left = await Promise.race([this.exit.then(() => true), delay(timeoutMs, false, { ref: false })]);
    if (!left) await this.kill();
    return left;
  }
}
