import type { Writable } from 'node:stream';
import { Coordinator } from '../coordinator/coordinator.js';
import { failureText } from '../errors.js';
import { UniqueId } from '../protocol/unique-id.js';
import { generateSecret } from '../transport/job-secret.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import { coordinatorBusyWindow } from './coordinator-busy-window.js';
import { EnvironmentReader, hostPort } from './job-environment.js';
import { ranksNamedBy } from './rank-error-line.js';
import { describeExit, type RankExit, RankProcess } from './rank-process.js';
import { sessionSettings } from './session-settings.js';
import { SharedOutput } from './shared-output.js';

export interface LocalJobOptions {
  readonly worldSize: number;
  readonly command: string;
  readonly args: readonly string[];
  readonly rails?: number;
  readonly transport?: CollectiveTransport;
  readonly collectiveTimeoutMs?: number;
  readonly heartbeatTimeoutMs?: number;
  /**
   * A fault-tolerant job (`rxccl launch --keep-going`): the coordinator and every rank get
   * GX1_FAULT_TOLERANT=1, and a rank that dies (a signal, or lost by the coordinator: its
   * connections closed, its lease ran out) is lost, reported on stderr, while the others go on
   * (they learn of it and may `shrink()`). A rank that exits with an error code still fails the
   * job, as does the coordinator's failure; else the job succeeds when at least one rank exits 0.
   */
  readonly keepGoing?: boolean;
  /**
   * With `keepGoing`: each time a rank dies, a replacement process (the same command, with
   * `GX1_JOIN=1`) asks to join the running job, up to this many in all (default 0). The ranks
   * admit it at their next step boundary (`grow()`, the `elastic` operator): it comes last in the
   * grown job. Its lines are prefixed `[replacement K]`.
   */
  readonly replacements?: number;
  /** The environment the ranks inherit, before the `GX1_*` variables (default `process.env`). */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * The address the coordinator listens on and the ranks dial (default loopback): another one of
   * this host's, for ranks started in other network namespaces (bench/collectives/hosts.ts).
   */
  readonly coordinatorHost?: string;
  readonly stdout?: Writable;
  readonly stderr?: Writable;
  /** How long ranks get between SIGTERM and SIGKILL (default 5 s). */
  readonly killGraceMs?: number;
  /**
   * After a rank or the coordinator fails, how long the other ranks get to print their own errors
   * and exit before they are sent SIGTERM (default 3 s; ends early when they have all exited).
   */
  readonly failureGraceMs?: number;
  /** How long the coordinator may take to see the last rank leave after every rank exited 0 (default 3 s). */
  readonly leaveGraceMs?: number;
  /**
   * How long after every other rank exited a rank still running is reported on stderr, naming it
   * and whether it left its session (default 10 s; again every as long).
   */
  readonly stragglerReportMs?: number;
}

export interface JobOutcome {
  /** Every rank exited 0 and the coordinator saw every rank leave. */
  readonly ok: boolean;
  /**
   * The first failure, naming the rank (or the coordinator) and why: a rank's own error line
   * (`rank 1 failed: INVALID_CONFIGURATION: ...`) where it printed one; null when ok.
   */
  readonly failure: string | null;
  /** With `keepGoing`: the ranks that failed while the job went on, each with why. */
  readonly lost: readonly string[];
  /** Set when the job was ended by a signal the launcher received. */
  readonly interruptedBy: NodeJS.Signals | null;
}

const DEFAULT_KILL_GRACE_MS = 5_000;
const DEFAULT_FAILURE_GRACE_MS = 3_000;
const DEFAULT_LEAVE_GRACE_MS = 3_000;
const DEFAULT_STRAGGLER_REPORT_MS = 10_000;
/** How long a rank's output may keep flowing after its process group was killed. */
const DRAIN_GRACE_MS = 1_000;

/** A failure of the job, and the ranks it names as data: one of them killed by a signal is its root cause (`killedRankBehind`). */
interface JobFailure {
  readonly reason: string;
  /** The failed rank, the ranks that never joined, the ranks the error it quotes names. */
  readonly ranks: readonly number[];
}

const delay = (ms: number) => new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), ms));

/** Where `rxccl launch` runs its coordinator, and so the interface its ranks use: loopback. */
export const LOCAL_COORDINATOR_HOST = '127.0.0.1';

/**
 * A job on this host (`rxccl launch`): a coordinator on loopback in this process, on a port the
 * system picks (parallel jobs never collide), a fresh unique id and secret, and one process per rank with the
 * `GX1_*` variables set. The first failure (a rank exiting non-zero or killed, the coordinator
 * failing) gives the other ranks `failureGraceMs` to print their own errors and exit, then ends
 * them: SIGTERM to each rank's process group, SIGKILL after `killGraceMs`; `interrupt` passes its
 * signal on at once. No rank process outlives the job. The failure names the root cause first:
 * the coordinator's failure, ranks that never joined while others waited for them, or a rank
 * killed by a signal (not the launcher's) that the first failure names.
 */
export class LocalJob {
  readonly outcome: Promise<JobOutcome>;
  /**
   * The first failure, described once the job is over: a rank's error line may reach the launcher
   * after its exit does, and the rank a failure names may be seen dead only after it.
   */
  private failure: (() => JobFailure) | null = null;
  /** Whether the launcher has signalled the ranks: a rank killed by a signal before then died of something else. */
  private signalled = false;
  /** Ranks killed by a signal the launcher did not send, in the order seen (without `keepGoing`). */
  private readonly killed: { readonly rank: number; readonly signal: NodeJS.Signals }[] = [];
  private interruptedBy: NodeJS.Signals | null = null;
  private killTimer: NodeJS.Timeout | null = null;
  private graceTimer: NodeJS.Timeout | null = null;
  /** Ranks the coordinator told others it waited for in vain (rendezvous timeouts). */
  private readonly neverJoined = new Set<number>();
  private rendezvousTimeoutMs = 0;
  private readonly killAllOnExit = () => this.signalAll('SIGKILL');
  /** Ranks the coordinator saw join (their collective channel) and leave. */
  private readonly joined = new Set<number>();
  private readonly left = new Set<number>();
  private stragglerReport: NodeJS.Timeout | null = null;
  /** With `keepGoing`: ranks that failed while the others went on. */
  private readonly lost: string[] = [];
  /** With `keepGoing`: ranks the coordinator told the others it lost (a lease that ran out: perhaps still running). */
  private readonly lostByCoordinator = new Map<number, string>();
  /** Lost ranks ended once the others were done (`endLostRanks`): their exit is not a failure. */
  private readonly ended = new Set<number>();

  /** Processes that exited 0: a job with `keepGoing` succeeds only with one at least. */
  private succeeded = 0;
  /** The job's coordinators all finished well: a replacement still waiting is refused, not failed. */
  private over = false;
  /** Every process the job started: its ranks, then the replacements (`replacements`). */
  readonly ranks: RankProcess[];

  private constructor(
    readonly coordinator: Coordinator,
    ranks: readonly RankProcess[],
    private readonly options: LocalJobOptions,
    /** Starts replacement process `index` (1, 2, ...), joining the running job at `coordinator`. */
    private readonly startReplacement: (index: number, coordinator: Coordinator) => RankProcess,
  ) {
    this.ranks = [...ranks];
    // Last resort should the launcher itself die of an exception: its ranks must not outlive it.
    process.once('exit', this.killAllOnExit);
    // The job's coordinator, and those of the jobs it grows into.
    coordinator.finished.then(
      () => {
        this.over = true;
        this.endUnadmittedReplacements();
      },
      (error: unknown) => {
        const text = failureText(error);
        const failure = { reason: `the coordinator failed: ${text}`, ranks: ranksNamedBy(text) };
        this.fail(() => failure);
      },
    );
    coordinator.events$.subscribe((event) => {
      if (event.type === 'rank-joined' && event.channel === 'collective') this.joined.add(event.rank);
      if (event.type === 'rank-left') this.left.add(event.rank);
      if (event.type === 'rank-lost') this.lostByCoordinator.set(event.rank, event.reason);
      if (event.type === 'rendezvous-timed-out') {
        for (const missing of event.missing) this.neverJoined.add(missing);
        this.rendezvousTimeoutMs = event.timeoutMs;
      }
    });
    for (const rank of ranks) this.watch(rank);
    this.outcome = this.finish();
  }

  /** Follows a process of the job to its end. */
  private watch(rank: RankProcess): void {
    void rank.exited.then((exit) => {
      if (this.ended.has(rank.rank)) return;
      if (this.over && rank.rank >= this.options.worldSize && (exit.kind !== 'exited' || exit.code !== 0)) {
        // A replacement the job ended before admitting: refused by the coordinator as it stopped.
        (this.options.stderr ?? process.stderr).write(`rxccl launch: ${rank.label} ${describeExit(exit)}: the job ended before admitting it\n`);
        return;
      }
      if (exit.kind === 'signalled' && !this.signalled && this.options.keepGoing !== true) this.killed.push({ rank: rank.rank, signal: exit.signal });
      if (exit.kind !== 'exited' || exit.code !== 0) this.rankFailed(rank, exit);
      else {
        this.succeeded += 1;
        this.watchStragglers();
      }
      this.endLostRanks();
      if (this.failure !== null && this.ranks.every((each) => !each.running)) this.endGrace();
    });
  }

  static async start(options: LocalJobOptions): Promise<LocalJob> {
    const uniqueId = UniqueId.random();
    // The ranks' session timeout (they inherit this environment) is how long they wait for each other.
    const reader = new EnvironmentReader(options.env ?? process.env, 'rxccl launch');
    const session = sessionSettings(reader);
    const { timeoutMs } = session;
    // One collective timeout for the coordinator and every rank: the flag's, else the ranks' variable.
    const collectiveTimeoutMs = options.collectiveTimeoutMs ?? session.collectiveTimeoutMs;
    // Unset, the ranks wait their session timeout: so does the coordinator, so that one number holds.
    const coordinatorTimeoutMs = collectiveTimeoutMs ?? timeoutMs;
    // Even on loopback: another user of this host must not join, read or stall the job.
    const secret = generateSecret();
    const coordinator = await Coordinator.listen({
      secret,
      host: options.coordinatorHost ?? LOCAL_COORDINATOR_HOST,
      port: 0,
      uniqueId,
      worldSize: options.worldSize,
      // Unset, they come from GX1_P2P_RAILS and GX1_COLLECTIVE_TRANSPORT, as for `rxccl coordinator` and openSession().
      ...(options.rails !== undefined ? { rails: options.rails } : {}),
      ...(options.transport !== undefined ? { transport: options.transport } : {}),
      ...(coordinatorTimeoutMs !== undefined ? { collectiveTimeoutMs: coordinatorTimeoutMs } : {}),
      ...(options.heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs: options.heartbeatTimeoutMs } : {}),
      ...(timeoutMs !== undefined ? { rendezvousTimeoutMs: timeoutMs } : {}),
      ...(options.keepGoing === true ? { faultTolerant: true } : {}),
      busyWindow: coordinatorBusyWindow(reader.settings),
    }, reader.settings);
    const shared = {
      GX1_COORDINATOR: hostPort(coordinator.address),
      GX1_UNIQUE_ID: uniqueId.toHex(),
      GX1_WORLD_SIZE: String(options.worldSize),
      GX1_LOCAL_WORLD_SIZE: String(options.worldSize),
      GX1_P2P_RAILS: String(coordinator.rails),
      GX1_COLLECTIVE_TRANSPORT: coordinator.transport,
      // The ranks bound the collectives no coordinator sees (tcp_peer's mesh, the native plane) alike.
      ...(collectiveTimeoutMs !== undefined ? { GX1_COLLECTIVE_TIMEOUT_MS: String(collectiveTimeoutMs) } : {}),
      GX1_SECRET: secret,
      ...(options.keepGoing === true ? { GX1_FAULT_TOLERANT: '1' } : {}),
    };
    const stdout = new SharedOutput(options.stdout ?? process.stdout);
    const stderr = new SharedOutput(options.stderr ?? process.stderr);
    const start = (rank: number, variables: NodeJS.ProcessEnv, label?: string) =>
      RankProcess.start({ rank, command: options.command, args: options.args, env: { ...(options.env ?? process.env), ...shared, ...variables }, stdout, stderr, ...(label !== undefined ? { label } : {}) });
    const ranks = Array.from({ length: options.worldSize }, (_, rank) => start(rank, { GX1_RANK: String(rank), GX1_LOCAL_RANK: String(rank) }));
    // A replacement is numbered after the ranks (it is none of theirs); its rank comes with its admission.
    const replacement = (index: number, newest: Coordinator) =>
      start(
        options.worldSize + index - 1,
        {
          // The job as it runs now: after a growth, the grown job's coordinator.
          GX1_COORDINATOR: hostPort(newest.address),
          GX1_UNIQUE_ID: newest.uniqueId.toHex(),
          GX1_WORLD_SIZE: String(newest.worldSize),
          GX1_JOIN: '1',
          GX1_RANK: '0',
          GX1_LOCAL_RANK: String(options.worldSize + index - 1),
        },
        `replacement ${index}`,
      );
    return new LocalJob(coordinator, ranks, options, replacement);
  }

  /**
   * Ends the job because the launcher got `signal`: the ranks get the same signal (SIGINT stays
   * SIGINT, so they can clean up as after Ctrl-C), then SIGKILL after the grace. A second
   * interrupt kills them at once.
   */
  interrupt(signal: NodeJS.Signals): void {
    if (this.interruptedBy !== null) {
      this.signalAll('SIGKILL');
      return;
    }
    this.interruptedBy = signal;
    this.failure ??= () => ({ reason: `interrupted by ${signal}`, ranks: [] });
    this.endGrace();
    this.terminate(signal);
  }

  /** Passes `signal` on to every rank still running, and nothing more (SIGUSR1: flight records). */
  forward(signal: NodeJS.Signals): void {
    for (const rank of this.ranks) if (rank.running) rank.signal(signal);
  }

  /**
   * A rank that exited because others never joined says only that it failed; the coordinator
   * knows why: those ranks come first.
   */
  private rootCauseOf(exit: JobFailure): JobFailure {
    const missing = [...this.neverJoined].filter((rank) => !this.joined.has(rank)).sort((a, b) => a - b);
    if (missing.length === 0) return exit;
    return { reason: `ranks [${missing.join(',')}] never joined the job (the others waited ${this.rendezvousTimeoutMs} ms for them); then ${exit.reason}`, ranks: [...missing, ...exit.ranks] };
  }

  /**
   * A rank killed by a signal the launcher did not send is the root cause of a failure that names
   * it: a survivor's abort (`rank 0 aborted: direct peer rank 2 left`) or the coordinator's may
   * reach the launcher before the killed rank's exit does.
   */
  private killedRankBehind({ reason, ranks }: JobFailure): string {
    const killed = this.killed.find(({ rank }) => ranks.includes(rank));
    return killed === undefined ? reason : `rank ${killed.rank} was killed by ${killed.signal}`;
  }

  /** Why a rank failed: its own rxccl error line where it printed one (naming it and the ranks the line names), else how its process ended. */
  private static describeRankFailure(rank: RankProcess, exit: RankExit): JobFailure {
    const error = exit.kind === 'exited' ? rank.errorLine : null;
    if (error === null) return { reason: `${rank.label} ${describeExit(exit)}`, ranks: [rank.rank] };
    return { reason: `${rank.label} failed: ${error}`, ranks: [rank.rank, ...ranksNamedBy(error)] };
  }

  /** A rank failed: the job's failure, or with `keepGoing` a lost rank the others go on without. */
  private rankFailed(rank: RankProcess, exit: RankExit): void {
    // Only a rank that died (a signal, or one the coordinator lost) is lost; one that exits with
    // an error code failed at its work (a wrong result, a shrink that timed out): the job fails.
    const died = exit.kind !== 'exited' || this.lostByCoordinator.has(rank.rank);
    if (this.options.keepGoing !== true || this.failure !== null || !died) {
      this.fail(() => this.rootCauseOf(LocalJob.describeRankFailure(rank, exit)));
      return;
    }
    const lost = `${rank.label} ${describeExit(exit)}`;
    this.lost.push(lost);
    const stderr = this.options.stderr ?? process.stderr;
    stderr.write(`rxccl launch: ${lost}; the job goes on without it (--keep-going)\n`);
    if (this.lost.length === this.ranks.length) {
      this.fail(() => this.everyRankFailed());
      return;
    }
    const started = this.ranks.length - this.options.worldSize;
    // A job already over (its ranks gone before this exit reached the launcher) admits nobody.
    if (started >= (this.options.replacements ?? 0) || this.over) return;
    const replacement = this.startReplacement(started + 1, this.coordinator.latest);
    this.ranks.push(replacement);
    this.watch(replacement);
    stderr.write(`rxccl launch: started ${replacement.label} for ${rank.label}; the job admits it at its next step boundary (grow())\n`);
  }

  /**
   * With `keepGoing`, once every rank has exited but ranks the coordinator lost while they ran on
   * (stopped, hung: their lease ran out), those are ended: the job went on without them and is over.
   */
  private endLostRanks(): void {
    if (this.options.keepGoing !== true) return;
    const running = this.ranks.filter((rank) => rank.running);
    if (running.length === 0 || !running.every((rank) => this.lostByCoordinator.has(rank.rank))) return;
    for (const rank of running) {
      this.ended.add(rank.rank);
      const lost = `rank ${rank.rank} was lost (${this.lostByCoordinator.get(rank.rank)}) and was still running when the others were done: ended`;
      this.lost.push(lost);
      (this.options.stderr ?? process.stderr).write(`rxccl launch: ${lost}\n`);
    }
    this.terminate('SIGTERM');
  }

  /**
   * Once the job (and every job it grew into) is done, a replacement still running was never
   * admitted (the ranks finished first, or it has not reached the coordinator yet): it is ended.
   */
  private endUnadmittedReplacements(): void {
    const waiting = this.ranks.filter((rank) => rank.running && rank.rank >= this.options.worldSize);
    if (waiting.length === 0) return;
    for (const rank of waiting) {
      this.ended.add(rank.rank);
      (this.options.stderr ?? process.stderr).write(`rxccl launch: ${rank.label} was still waiting to be admitted when the job ended: ended\n`);
      // Only it: the ranks may still be finishing after they left.
      rank.signal('SIGTERM');
    }
    setTimeout(() => {
      for (const rank of waiting) rank.signal('SIGKILL');
    }, this.options.killGraceMs ?? DEFAULT_KILL_GRACE_MS).unref();
  }

  /** With `keepGoing`, every rank was lost: the list names them all, and blames none (`killed` is kept only without `keepGoing`). */
  private everyRankFailed(): JobFailure {
    return { reason: `every rank failed: ${this.lost.join('; ')}`, ranks: [] };
  }

  /** The first failure: the other ranks get the grace to report their own errors, then are ended. */
  private fail(failure: () => JobFailure): void {
    if (this.failure !== null) return;
    this.failure = failure;
    this.graceTimer = setTimeout(() => this.terminate('SIGTERM'), this.options.failureGraceMs ?? DEFAULT_FAILURE_GRACE_MS);
  }

  private endGrace(): void {
    if (this.graceTimer !== null) clearTimeout(this.graceTimer);
    this.graceTimer = null;
  }

  private terminate(signal: NodeJS.Signals): void {
    this.signalled = true;
    for (const rank of this.ranks) {
      if (!rank.running) continue;
      rank.signal(signal);
      // A stopped rank (SIGSTOP, a debugger) only gets its signal once it runs again.
      rank.signal('SIGCONT');
    }
    this.killTimer ??= setTimeout(() => this.signalAll('SIGKILL'), this.options.killGraceMs ?? DEFAULT_KILL_GRACE_MS);
  }

  /**
   * Once only some ranks still run and every other one exited 0, says which, periodically: a rank
   * that finished its work but never left its session (or whose process something else keeps
   * alive) is otherwise a silent hang.
   */
  private watchStragglers(): void {
    if (this.failure !== null || this.stragglerReport !== null || this.ranks.every((rank) => rank.running)) return;
    const period = this.options.stragglerReportMs ?? DEFAULT_STRAGGLER_REPORT_MS;
    this.stragglerReport = setInterval(() => {
      if (this.failure !== null) return;
      const stderr = this.options.stderr ?? process.stderr;
      for (const rank of this.ranks.filter((each) => each.running)) {
        const state = this.left.has(rank.rank)
          ? 'it left its session, but something else keeps its process alive'
          : this.joined.has(rank.rank)
            ? 'it has not left its session (does it call session.close()?)'
            : 'it never joined the session';
        stderr.write(`rxccl launch: ${rank.label} is still running after every other rank exited; ${state}\n`);
      }
    }, period);
    this.stragglerReport.unref();
  }

  /** Which ranks the coordinator did not see join, or join and leave. */
  private describeMembership(): string {
    const all = this.ranks.map((rank) => rank.rank);
    const neverJoined = all.filter((rank) => !this.joined.has(rank));
    const neverLeft = all.filter((rank) => this.joined.has(rank) && !this.left.has(rank));
    return [
      ...(neverJoined.length > 0 ? [`ranks [${neverJoined.join(',')}] never joined`] : []),
      ...(neverLeft.length > 0 ? [`ranks [${neverLeft.join(',')}] joined but never left`] : []),
    ].join('; ');
  }

  private signalAll(signal: NodeJS.Signals): void {
    this.signalled = true;
    for (const rank of this.ranks) rank.signal(signal);
  }

  private async finish(): Promise<JobOutcome> {
    // Replacements start while the others run: until every process started has exited.
    for (let seen = 0; seen < this.ranks.length; ) {
      seen = this.ranks.length;
      await Promise.all(this.ranks.map((rank) => rank.exited));
    }
    // With keepGoing, every rank lost and every replacement ended unadmitted is no success.
    if (this.failure === null && this.succeeded === 0) this.failure = () => this.everyRankFailed();
    if (this.failure === null) {
      // Every rank exited 0; their last LEAVE may still be on its way to the coordinator.
      const left = await Promise.race([this.coordinator.finished.then(() => 'left' as const, () => 'failed' as const), delay(this.options.leaveGraceMs ?? DEFAULT_LEAVE_GRACE_MS)]);
      if (left === 'late') {
        const membership = this.describeMembership();
        this.failure = () => ({ reason: `every rank exited 0, but the coordinator did not see every rank join and leave: ${membership} (does each rank open a session and close it?)`, ranks: [] });
      }
      // 'failed' has already recorded the coordinator's failure.
    }
    this.endGrace();
    if (this.killTimer !== null) clearTimeout(this.killTimer);
    if (this.stragglerReport !== null) clearInterval(this.stragglerReport);
    await this.coordinator.close();
    // Whatever a rank left running in its process group ends with the job, before the job says it ended.
    this.signalAll('SIGKILL');
    await Promise.all(this.ranks.map((rank) => rank.groupGone(DRAIN_GRACE_MS)));
    const drained = await Promise.race([Promise.all(this.ranks.map((rank) => rank.drained)), delay(DRAIN_GRACE_MS)]);
    if (drained === 'late') for (const rank of this.ranks) rank.abandonOutput();
    process.off('exit', this.killAllOnExit);
    const failure = this.failure === null ? null : this.killedRankBehind(this.failure());
    return { ok: failure === null, failure, interruptedBy: this.interruptedBy, lost: this.lost };
  }
}
