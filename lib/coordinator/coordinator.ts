import type { Server, Socket } from 'node:net';
import { asyncScheduler, interval, type Observable, type SchedulerLike, Subject, type Subscription, timer } from 'rxjs';
import { debugLog } from '../diagnostics/debug-log.js';
import { DEFAULT_SLOW_COLLECTIVE_MS } from '../diagnostics/slow-collective.js';
import { readyTransportField } from '../transport/ready-transport.js';
import { ChannelClosedError, ConfigurationError, failureText, ProtocolError, type RxcclError } from '../errors.js';
import { ANY_RANK, FLAG_P2P_CHANNEL } from '../protocol/constants.js';
import { abortFrame, admissionFrame, growRequestMembers, isJoinerHeader, joinersWaitingFrame, rankLostFrame } from '../protocol/control-frames.js';
import type { Frame } from '../protocol/frame.js';
import { formatGrownJob, type GrownJob } from '../protocol/grown-job.js';
import { makeHeader } from '../protocol/frame.js';
import { Opcode } from '../protocol/opcode.js';
import { UniqueId } from '../protocol/unique-id.js';
import type { BusyWindow } from '../transport/busy-window.js';
import { FrameChannel, outgoing, type OutgoingFrame } from '../transport/frame-channel.js';
import {
  type CollectiveTransport,
  MAX_TIMER_DELAY_MS,
  resolveTransport,
  validateRails,
  validateTimeout,
  validateWorldSize,
} from '../transport/transport-kind.js';
import { collectiveLoop, type CollectiveProgress } from './collective-loop.js';
import { CoordinatorEventReporter } from './coordinator-event-reporter.js';
import type { CoordinatorEvent } from './coordinator-events.js';
import { coordinatorEventLogger } from './log-coordinator-events.js';
import { exchangePeerEndpoints } from './peer-endpoint-exchange.js';
import { DEFAULT_P2P_BUFFER_LIMIT_BYTES } from './p2p-matcher.js';
import { p2pRouter } from './p2p-router.js';
import { Admission, ADMISSION_GRACE_MS } from '../transport/admission.js';
import { acceptHandshake, MAX_UNAUTHENTICATED_CONNECTIONS } from '../transport/handshake.js';
import { type JobSecret, resolveSecret, warnIfUnauthenticated } from '../transport/job-secret.js';
import { resolveFaultTolerance } from '../transport/fault-tolerance.js';
import { createListener, resolveTls, type TlsOptions, type TlsSettings } from '../transport/tls-settings.js';
import { optionOrSetting } from '../settings/option-or-setting.js';
import { type Environment, type Settings, settingsOf } from '../settings/read-settings.js';
import { secretVariables, tlsVariables } from '../settings/setting-parts.js';
import { type ChannelRole, emptyJoinRule, joinFailure, roleKey, validateJoin } from './validate-join.js';
import { admitJoiner, type Joiner, WaitingJoiners } from './waiting-joiners.js';

export const DEFAULT_COLLECTIVE_TIMEOUT_MS = 300_000;
/** How long a new connection may take to send its JOIN before it is refused. */
export const DEFAULT_JOIN_TIMEOUT_MS = 10_000;
/** How long a joined rank waits for the others before it is told who is missing: the ranks' default session timeout. */
export const DEFAULT_RENDEZVOUS_TIMEOUT_MS = 300_000;
/** How often the coordinator reports the ranks that have not joined yet. */
export const DEFAULT_JOIN_REPORT_INTERVAL_MS = 10_000;

/** What `Coordinator.listen` takes: the job it serves and the limits it keeps. */
export interface CoordinatorOptions {
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Port to listen on; 0 (the default) takes a free one, see `Coordinator.address`. */
  port?: number;
  /** The job's unique id; every frame of the job carries it. */
  uniqueId: UniqueId | string;
  /** How many ranks join. */
  worldSize: number;
  /** Point-to-point rails, 1..64; default `GX1_P2P_RAILS`, else 1. */
  rails?: number;
  /** Default `GX1_COLLECTIVE_TRANSPORT`, else tcp_peer (`DEFAULT_TRANSPORT`). */
  transport?: CollectiveTransport | string;
  /** Per collective sequence, from its first request (default 300 s, as the reference design). */
  collectiveTimeoutMs?: number;
  /** Heartbeat lease per rank; off unless set. */
  heartbeatTimeoutMs?: number;
  /** How long a new connection may take to send its JOIN (default 10 s). */
  joinTimeoutMs?: number;
  /** Time source for timeouts and leases (tests inject a virtual one). */
  scheduler?: SchedulerLike;
  /**
   * tcp_host_staged: unmatched bytes per sending rank and rail the coordinator acknowledges at
   * once (default 1 GiB). Past it a Send's acknowledgement, which the rank's `send` waits for,
   * is withheld until a receive takes the data; a rank that keeps sending regardless fails the
   * session, named (docs/protocol.md 10.3). Connections are read throughout.
   */
  p2pBufferLimitBytes?: number;
  /**
   * The rank whose process hosts this coordinator (rank 0 under torchrun, Slurm, Open MPI): the
   * listener and that rank's own connections then do not keep the process alive, only the other
   * ranks' connections do, so a host rank that forgets `close()` still exits once the others left.
   */
  hostRank?: number;
  /**
   * How long a rank that joined waits for the others before the coordinator answers its JOIN with
   * an Abort naming the ranks that have not joined (default 300 s, the ranks' default session
   * timeout: set it to the ranks' `GX1_TIMEOUT_MS`). Its place is freed for a retry.
   */
  rendezvousTimeoutMs?: number;
  /** How often `ranks-not-joined` is reported (and logged) until every rank joined (default 10 s). */
  joinReportIntervalMs?: number;
  /** After how long, and again every as long, a collective waiting for ranks is reported (default 30 s). */
  slowCollectiveMs?: number;
  /**
   * The job's secret (default `GX1_SECRET`, else `GX1_SECRET_FILE`): every connection must prove
   * it knows it before its JOIN is read, and nothing of the job is said to one that does not.
   */
  secret?: string | Uint8Array;
  /**
   * Connections held before they authenticate, at once (default 1024); a new one past it closes
   * the oldest connection of the address holding the most (transport/admission.ts).
   */
  maxUnauthenticatedConnections?: number;
  /** TLS for every channel (default `GX1_TLS_CERT`, `GX1_TLS_KEY`, `GX1_TLS_CA`; mutual with a CA). */
  tls?: TlsOptions;
  /**
   * Keeps the coordinator's event loop turning for a moment after each collective request and
   * point-to-point frame it takes (the last request of a sequence is followed by the responses),
   * so the next one is read at once instead of after a wake-up (`coordinatorBusyWindow` in
   * lib/launch builds the one `rxccl launch`, `rxccl coordinator` and a hosting rank 0 use).
   * Default none.
   */
  busyWindow?: BusyWindow | null;
  /**
   * The job survives losing a rank (default `GX1_FAULT_TOLERANT`, else false; set it for the
   * whole job): a rank whose connections end, or whose lease runs out, is reported to the others
   * (a Leave notice naming it, docs/protocol.md 13.7) and dropped, instead of ending the job.
   */
  faultTolerant?: boolean;
  /**
   * The most ranks a fault-tolerant job may grow to (default `worldSize`: a process that joins
   * the running job only replaces a lost rank). A process asking to join past it is refused
   * (docs/protocol.md 13.9).
   */
  maxWorldSize?: number;
}

/** `CoordinatorOptions` checked, with what they left out settled. */
type ResolvedCoordinatorOptions = Required<Omit<CoordinatorOptions, 'host' | 'port' | 'heartbeatTimeoutMs' | 'transport' | 'hostRank' | 'secret' | 'tls' | 'busyWindow'>> & {
  hostRank: number | null;
  busyWindow: BusyWindow | null;
  heartbeatTimeoutMs: number | null;
  secret: JobSecret | null;
  tls: TlsSettings | null;
  transport: CollectiveTransport;
  uniqueId: UniqueId;
};

/** The ranks' connections of one kind (the collective channels, or one rail), by rank. */
class ChannelGroup {
  readonly members: (FrameChannel | undefined)[];
  joined = 0;
  /** Ranks that joined but whose rendezvous wait ran out (they did join: not named missing). */
  readonly expired = new Set<number>();
  constructor(worldSize: number) {
    this.members = new Array<FrameChannel | undefined>(worldSize);
  }
  get complete(): boolean {
    return this.joined === this.members.length;
  }
}

const DISCONNECT_GRACE_MS = 25;
const ZERO_ID = UniqueId.fromBytes(new Array<number>(UniqueId.BYTES).fill(0));

/**
 * The rendezvous coordinator (the reference design's `TcpRendezvousServer`): accepts each rank's
 * collective channel and P2P rails, then runs the ordered collective loop and one P2P router per
 * rail until every rank leaves or something fails. A failure anywhere is broadcast as Abort on
 * every channel of every rank, and `done` rejects with it.
 *
 * A connection that fails its JOIN, speaks garbage or closes early is answered with an Abort frame
 * naming the reason and dropped; the rendezvous of the legitimate ranks goes on.
 */
export class Coordinator {
  readonly address: { host: string; port: number };
  readonly uniqueId: UniqueId;
  readonly worldSize: number;
  readonly rails: number;
  readonly transport: CollectiveTransport;
  /** Resolves when every rank has left cleanly; rejects with the session's failure. */
  readonly done: Promise<void>;
  /**
   * Each connection refused before it joined, as the error it was refused with (its message is
   * the Abort's text after `connection rejected: `; its code the category: PROTOCOL for a stream
   * that is not GX1, WRONG_SESSION, INVALID_CONFIGURATION, TIMEOUT, CHANNEL_CLOSED). Completes
   * when the coordinator stops.
   */
  readonly rejections$: Observable<RxcclError>;
  private readonly rejections = new Subject<RxcclError>();
  /**
   * What the job does, as typed events (see `CoordinatorEvent`): ranks joining and leaving, the
   * ranks still missing, each collective and point-to-point match, heartbeats, the failure. Never
   * a payload byte. Completes when the coordinator stops.
   *
   * @example
   * coordinator.events$.subscribe((event) => {
   *   if (event.type === 'ranks-not-joined') console.warn(`still waiting for ranks ${event.missing}`);
   * });
   */
  readonly events$: Observable<CoordinatorEvent>;
  private readonly events = new CoordinatorEventReporter(coordinatorEventLogger(debugLog));
  private readonly rendezvousDeadlines = new Map<FrameChannel, Subscription>();
  private readonly joinReport: Subscription;

  private readonly groups = new Map<string, ChannelGroup>();
  private readonly progress: CollectiveProgress = { sequence: 0n };
  private readonly running: Subscription[] = [];
  private readonly pending = new Set<Socket>();
  private readonly earlyLeaves = new Map<FrameChannel, () => void>();
  /** Ranks a fault-tolerant job lost (`loseRank`). */
  private readonly lost = new Set<number>();
  /** How many point-to-point rails reported a rank that left (`loseRank`). */
  private readonly leftReports = new Map<number, number>();
  /** Processes waiting to join this fault-tolerant job while it runs (docs/protocol.md 13.9). */
  private readonly joiners: WaitingJoiners;
  /**
   * The coordinator of the job this one grew into (`grow()` of its ranks), on the same host; null
   * while it has not grown. A job grows once: its ranks go on in the grown job.
   */
  successor: Coordinator | null = null;
  /** The coordinator of the newest job this one grew into (itself where it has not grown). */
  get latest(): Coordinator {
    return this.successor?.latest ?? this;
  }
  /** A grow request was taken (its coordinator starting, or started). */
  private growing = false;
  /**
   * Resolves when this job and every job it grew into (`successor`, and so on) are done; rejects
   * with the first failure among them. What a launcher awaits where its job may grow.
   */
  readonly finished: Promise<void>;
  private loopsLeft: number;
  private ended = false;
  private settle!: { resolve: () => void; reject: (error: unknown) => void };

  private constructor(
    private readonly server: Server,
    private readonly admission: Admission,
    private readonly options: ResolvedCoordinatorOptions,
  ) {
    const bound = server.address();
    if (bound === null || typeof bound === 'string') throw new ConfigurationError('coordinator socket has no TCP address');
    this.address = { host: bound.address, port: bound.port };
    this.uniqueId = options.uniqueId;
    this.worldSize = options.worldSize;
    this.rails = options.rails;
    this.transport = options.transport;
    this.groups.set('collective', new ChannelGroup(this.worldSize));
    for (let rail = 0; rail < this.p2pChannels; rail++) this.groups.set(`rail ${rail}`, new ChannelGroup(this.worldSize));
    this.loopsLeft = this.groups.size;
    this.rejections$ = this.rejections.asObservable();
    this.events$ = this.events.events$;
    const listening = options.scheduler.now();
    this.joinReport = interval(options.joinReportIntervalMs, options.scheduler).subscribe(() =>
      this.events.next({ type: 'ranks-not-joined', missing: this.ranksNotJoined(), waitedMs: options.scheduler.now() - listening }),
    );
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    // Nobody may be awaiting `done` yet; an unobserved failure is still reported through it.
    this.done.catch(() => undefined);
    this.finished = this.done.then(() => this.successor?.finished);
    this.finished.catch(() => undefined);
    this.joiners = new WaitingJoiners({
      uniqueId: this.uniqueId,
      maxWorldSize: options.maxWorldSize,
      liveRanks: () => this.worldSize - this.lost.size,
      announce: (waiting) => this.announceJoiners(waiting),
    });
    if (options.hostRank !== null) server.unref();
  }

  /**
   * Binds and starts the rendezvous. What the options leave out comes from `GX1_P2P_RAILS`,
   * `GX1_COLLECTIVE_TRANSPORT`, the secret, TLS and `GX1_FAULT_TOLERANT` settings (`env`: settings,
   * or an environment read into them; default this process's, read once), as the ranks read them.
   * @example
   * const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 29500, uniqueId, worldSize: 4, secret });
   * await coordinator.done; // every rank joined, worked and left
   */
  static async listen(options: CoordinatorOptions, env: Settings | Environment = process.env): Promise<Coordinator> {
    const settings = settingsOf(env);
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigurationError(`coordinator port ${String(port)} is outside 0..65535`);
    const resolved = {
      uniqueId: UniqueId.from(options.uniqueId),
      worldSize: validateWorldSize(options.worldSize),
      rails: optionOrSetting('rails', options.rails, validateRails, settings.GX1_P2P_RAILS),
      transport: resolveTransport(options.transport, settings.GX1_COLLECTIVE_TRANSPORT).transport,
      collectiveTimeoutMs: validateTimeout(options.collectiveTimeoutMs ?? DEFAULT_COLLECTIVE_TIMEOUT_MS, 'TCP collective timeout'),
      heartbeatTimeoutMs:
        options.heartbeatTimeoutMs === undefined ? null : validateTimeout(options.heartbeatTimeoutMs, 'TCP heartbeat timeout'),
      joinTimeoutMs: validateTimeout(options.joinTimeoutMs ?? DEFAULT_JOIN_TIMEOUT_MS, 'JOIN timeout'),
      p2pBufferLimitBytes: validateBufferLimit(options.p2pBufferLimitBytes ?? DEFAULT_P2P_BUFFER_LIMIT_BYTES),
      scheduler: options.scheduler ?? asyncScheduler,
      hostRank: options.hostRank ?? null,
      rendezvousTimeoutMs: validateTimeout(options.rendezvousTimeoutMs ?? DEFAULT_RENDEZVOUS_TIMEOUT_MS, 'rendezvous timeout'),
      joinReportIntervalMs: validateTimeout(options.joinReportIntervalMs ?? DEFAULT_JOIN_REPORT_INTERVAL_MS, 'join report interval'),
      slowCollectiveMs: validateTimeout(options.slowCollectiveMs ?? DEFAULT_SLOW_COLLECTIVE_MS, 'slow collective report'),
      secret: resolveSecret(options.secret, secretVariables(settings)),
      maxUnauthenticatedConnections: validateConnectionCap(options.maxUnauthenticatedConnections ?? MAX_UNAUTHENTICATED_CONNECTIONS),
      tls: resolveTls(options.tls, tlsVariables(settings)),
      busyWindow: options.busyWindow ?? null,
      faultTolerant: optionOrSetting('faultTolerant', options.faultTolerant, resolveFaultTolerance, settings.GX1_FAULT_TOLERANT),
      maxWorldSize: validateWorldSize(options.maxWorldSize ?? options.worldSize),
    };
    if (resolved.maxWorldSize < resolved.worldSize) throw new ConfigurationError(`maxWorldSize ${resolved.maxWorldSize} is below the world size ${resolved.worldSize}`);
    return Coordinator.bind(options.host ?? '127.0.0.1', port, resolved);
  }

  /** Listens on `host:port` with settled options (`listen`'s, or a grown job's: `grow`). */
  private static async bind(host: string, port: number, resolved: ResolvedCoordinatorOptions): Promise<Coordinator> {
    let coordinator: Coordinator | undefined;
    const admission = new Admission({
      cap: resolved.maxUnauthenticatedConnections,
      deadlineMs: resolved.joinTimeoutMs + ADMISSION_GRACE_MS,
      onDropped: (error) => coordinator?.rejections.next(error),
    });
    const server = createListener(resolved.tls, resolved.joinTimeoutMs, admission, (socket) =>
      coordinator === undefined ? socket.destroy() : coordinator.accept(socket),
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) => reject(new ConfigurationError(`cannot bind coordinator to ${host}:${port}: ${error.message}`, { cause: error })));
      server.listen(port, host, () => resolve());
    });
    warnIfUnauthenticated(host, resolved.secret, 'coordinator');
    coordinator = new Coordinator(server, admission, resolved);
    return coordinator;
  }

  /**
   * Stops the session: ranks still connected get an Abort, and `done` rejects if not yet settled.
   * @example
   * process.once('SIGINT', () => void coordinator.close());
   */
  async close(): Promise<void> {
    this.fail(new ChannelClosedError('coordinator closed by its owner'));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    // The jobs it grew into end with it (a grow still starting its coordinator closes that one as it comes).
    await this.successor?.close();
  }

  /** P2P channels per rank: every rail on tcp_host_staged; one control channel on tcp_peer. */
  private get p2pChannels(): number {
    return this.transport === 'tcp_peer' ? 1 : this.rails;
  }

  private accept(socket: Socket): void {
    if (this.ended) {
      socket.destroy();
      return;
    }
    const { joinTimeoutMs, scheduler, secret } = this.options;
    this.pending.add(socket);
    socket.once('close', () => this.pending.delete(socket));
    const channel = new FrameChannel(socket);
    acceptHandshake(channel, { secret, timeoutMs: joinTimeoutMs, scheduler, openingRule: emptyJoinRule })
      .finally(() => this.admission.authenticated(socket))
      .then(
        (frame) => {
          if (isJoinerHeader(frame.header) && frame.header.uniqueId.equals(this.uniqueId)) {
            this.pending.delete(channel.socket);
            this.wait({ channel, uniqueId: this.uniqueId });
            return;
          }
          let joined: { rank: number; role: ChannelRole };
          try {
            joined = validateJoin(frame, this.uniqueId, this.worldSize, this.p2pChannels);
          } catch (error) {
            // Only a rank of this session learns its id back; a rank of this world is addressed.
            const ours = frame.header.uniqueId.equals(this.uniqueId);
            const rank = frame.header.sourceRank < this.worldSize ? frame.header.sourceRank : ANY_RANK;
            this.reject(channel, error as RxcclError, ours ? this.uniqueId : ZERO_ID, rank);
            return;
          }
          this.join(channel, joined.rank, joined.role);
        },
        (error: unknown) => this.reject(channel, joinFailure(error, joinTimeoutMs), ZERO_ID, ANY_RANK),
      );
  }

  /** Every rank has joined every channel: the job runs. */
  private get started(): boolean {
    return [...this.groups.values()].every((group) => group.complete);
  }

  /**
   * A process asking to join the running job (docs/protocol.md 13.9): it waits, announced to the
   * ranks, until they admit it (`grow`); refused where the job is not fault-tolerant, has not
   * started, or is at its maximum size.
   */
  private wait(joiner: Joiner): void {
    // A job that grew goes on in the job it grew into: the joiner waits for that one's ranks.
    if (this.successor !== null) {
      this.successor.wait(joiner);
      return;
    }
    const { channel } = joiner;
    const refuse = (why: string) => this.reject(channel, new ConfigurationError(why), joiner.uniqueId, ANY_RANK);
    if (this.ended) {
      refuse(`job ${this.uniqueId.toHex()} ended: its ranks admit nobody more`);
      return;
    }
    if (!this.options.faultTolerant) {
      refuse(`job ${this.uniqueId.toHex()} is not fault-tolerant: a process joins a running job only where the job and its coordinator run with GX1_FAULT_TOLERANT=1 (rxccl launch --keep-going)`);
      return;
    }
    if (!this.started) {
      refuse(`job ${this.uniqueId.toHex()} has not started (ranks [${this.ranksNotJoined().join(',')}] have not joined): a process joins a job that runs`);
      return;
    }
    try {
      this.joiners.add(joiner);
    } catch (error) {
      this.reject(channel, error as RxcclError, joiner.uniqueId, ANY_RANK);
    }
  }

  /** Tells every rank the job still has how many processes wait to join. */
  private announceJoiners(waiting: number): void {
    if (this.ended) return;
    this.events.next({ type: 'joiners-waiting', waiting });
    if (!this.groups.get('rail 0')!.complete) return;
    this.tellFirstRails((rank) => joinersWaitingFrame(this.origin, rank, waiting));
  }

  /** Who the coordinator's own frames come from: this job. */
  private get origin(): { uniqueId: UniqueId; worldSize: number } {
    return { uniqueId: this.uniqueId, worldSize: this.worldSize };
  }

  /**
   * Sends each rank the job still has, on its first rail (the control channel on tcp_peer), the
   * frame `frameFor` makes for it (none where it gives null). A rank whose connection is going
   * is passed over: its loss is reported when that connection ends.
   */
  private tellFirstRails(frameFor: (rank: number) => Frame | null): void {
    this.groups.get('rail 0')!.members.forEach((channel, rank) => {
      if (channel === undefined || this.lost.has(rank)) return;
      const frame = frameFor(rank);
      if (frame === null) return;
      try {
        channel.send(outgoing(frame));
      } catch {
        // Going: reported when its connection ends.
      }
    });
  }

  private get endedBeforeAdmitting(): string {
    return `job ${this.uniqueId.toHex()} ended before its ranks admitted this process`;
  }

  /** Ends `joiners`' wait, each told `why` (under the id it asked with). */
  private refuseJoiners(joiners: readonly Joiner[], why: string): void {
    for (const { channel, uniqueId } of joiners) this.reject(channel, new ChannelClosedError(why), uniqueId, ANY_RANK);
  }

  /**
   * A member's request to grow the job (docs/protocol.md 13.9): admit `tag` of the waiting
   * processes into a new job of the members (in the request's order) then them. A coordinator for
   * that job listens on this one's host (same settings, a new unique id); every member is told its
   * rank there on its first rail, every admitted joiner on its connection, and the joiners still
   * waiting move on to it. Members the coordinator lost meanwhile are left out. A job grows once.
   */
  private grow(rank: number, frame: Frame): void {
    if (this.ended) return;
    const refused = (why: string) => this.fail(new ProtocolError(`rank ${rank} asked to grow job ${this.uniqueId.toHex()}: ${why}`));
    if (this.growing) return refused('it grew already');
    const members = growRequestMembers(frame);
    const live = Array.from({ length: this.worldSize }, (_, each) => each).filter((each) => !this.lost.has(each));
    if (new Set(members).size !== members.length || members.some((member) => member >= this.worldSize)) {
      return refused(`members [${members.join(',')}] are not distinct ranks of a world of ${this.worldSize}`);
    }
    const left = live.filter((each) => !members.includes(each));
    if (left.length > 0) return refused(`ranks [${left.join(',')}] run but are not among its members [${members.join(',')}]`);
    const kept = members.filter((member) => !this.lost.has(member));
    const joiners = this.joiners.take(Number(frame.header.tag));
    const worldSize = kept.length + joiners.length;
    const hostRank = this.options.hostRank === null ? -1 : kept.indexOf(this.options.hostRank);
    this.growing = true;
    Coordinator.bind(this.address.host, 0, { ...this.options, uniqueId: UniqueId.random(), worldSize, hostRank: hostRank < 0 ? null : hostRank }).then(
      (successor) => {
        if (this.ended) {
          // Closed (or every member gone) while it started: nobody waits for it.
          void successor.close();
          this.refuseJoiners(joiners, this.endedBeforeAdmitting);
          return;
        }
        this.successor = successor;
        successor.joiners.adopt(this.joiners.handOver());
        const job = (newRank: number): GrownJob => ({ port: successor.address.port, uniqueId: successor.uniqueId, rank: newRank, worldSize, members: kept.length });
        // A member gone since is named by the grown job's rendezvous as not joined.
        this.tellFirstRails((member) => (kept.includes(member) ? admissionFrame(this.origin, member, formatGrownJob(job(kept.indexOf(member)))) : null));
        joiners.forEach((joiner, index) => admitJoiner(joiner, job(kept.length + index)));
        this.events.next({ type: 'grown', members: kept, newcomers: joiners.length, uniqueId: successor.uniqueId.toHex(), port: successor.address.port });
      },
      (error: unknown) => {
        this.refuseJoiners(joiners, `job ${this.uniqueId.toHex()} could not grow: ${failureText(error)}`);
        this.fail(error);
      },
    );
  }

  private join(channel: FrameChannel, rank: number, role: ChannelRole): void {
    const group = this.groups.get(roleKey(role))!;
    if (group.members[rank] !== undefined || group.complete) {
      // Once every rank is in, a second JOIN is most often the same code run again (a notebook
      // cell, a REPL line) against the job it opened before: say so, and how to start over.
      const again = group.complete
        ? `: every rank of job ${this.uniqueId.toHex()} has joined and it is running; a rank joins a job once, so close that job's sessions and start a new job (a new Coordinator with a new UniqueId) to run again`
        : '';
      this.reject(channel, new ConfigurationError(`rank ${rank} joined twice (${roleKey(role)})${again}`), this.uniqueId, rank);
      return;
    }
    group.members[rank] = channel;
    group.joined += 1;
    group.expired.delete(rank);
    if (rank === this.options.hostRank) channel.socket.unref();
    this.events.next({ type: 'rank-joined', rank, channel: roleKey(role) });
    // A rank that drops out before everyone arrived frees its place for a retry.
    const leaveEarly = () => {
      if (group.members[rank] === channel && !group.complete) {
        group.members[rank] = undefined;
        group.joined -= 1;
        this.earlyLeaves.delete(channel);
        this.rendezvousDeadlines.get(channel)?.unsubscribe();
        this.rendezvousDeadlines.delete(channel);
      }
    };
    this.earlyLeaves.set(channel, leaveEarly);
    channel.socket.once('close', leaveEarly);
    if (!group.complete) {
      this.awaitRendezvous(channel, rank, role, group, leaveEarly);
      return;
    }
    this.events.next({ type: 'channel-ready', channel: roleKey(role) });
    if ([...this.groups.values()].every((each) => each.complete)) this.joinReport.unsubscribe();
    const channels = group.members as FrameChannel[];
    channels.forEach((member, memberRank) => {
      member.socket.off('close', this.earlyLeaves.get(member)!);
      this.earlyLeaves.delete(member);
      this.rendezvousDeadlines.get(member)?.unsubscribe();
      this.rendezvousDeadlines.delete(member);
      this.pending.delete(member.socket);
      member.send({ header: this.readyHeader(memberRank, role), parts: [] });
    });
    // Joiners a job that grew into this one did not admit wait here: the ranks hear of them now.
    if (role.kind === 'rail' && role.rail === 0 && this.joiners.count > 0) this.announceJoiners(this.joiners.count);
    this.start(role, channels);
  }

  /**
   * Past the rendezvous timeout the waiting rank is told who has not joined (an Abort in place of
   * READY: its error names them instead of only timing out) and its place is freed.
   */
  private awaitRendezvous(channel: FrameChannel, rank: number, role: ChannelRole, group: ChannelGroup, leaveEarly: () => void): void {
    const { rendezvousTimeoutMs, scheduler } = this.options;
    const deadline = timer(Math.min(rendezvousTimeoutMs, MAX_TIMER_DELAY_MS), scheduler).subscribe(() => {
      if (group.members[rank] !== channel || group.complete) return;
      group.expired.add(rank);
      const missing = Array.from({ length: this.worldSize }, (_, other) => other).filter((other) => group.members[other] === undefined && !group.expired.has(other));
      this.events.next({ type: 'rendezvous-timed-out', rank, channel: roleKey(role), missing, timeoutMs: rendezvousTimeoutMs });
      try {
        channel.send(this.abortFrame(`ranks [${missing.join(',')}] have not joined (${roleKey(role)}) within ${rendezvousTimeoutMs} ms`, this.uniqueId, rank, 0n));
      } catch {
        // Already gone: its place is freed below all the same.
      }
      leaveEarly();
      channel.finish();
    });
    this.rendezvousDeadlines.set(channel, deadline);
  }

  /** The ranks missing from some channel kind, in rank order. */
  private ranksNotJoined(): number[] {
    return Array.from({ length: this.worldSize }, (_, rank) => rank).filter((rank) => [...this.groups.values()].some((group) => group.members[rank] === undefined));
  }

  private readyHeader(rank: number, role: ChannelRole) {
    return makeHeader(
      {
        uniqueId: this.uniqueId,
        opcode: Opcode.Ready,
        destinationRank: rank,
        worldSize: this.worldSize,
        flags: role.kind === 'rail' ? FLAG_P2P_CHANNEL : 0,
        tag: role.kind === 'rail' ? BigInt(role.rail) : 0n,
        // Which transport this coordinator runs: a rank that chose none takes it.
        communicator: readyTransportField(this.transport),
      },
      0,
    );
  }

  private start(role: ChannelRole, channels: FrameChannel[]): void {
    if (role.kind === 'collective' && this.transport === 'tcp_peer') {
      // Ranks publish their direct peer endpoints on the collective channel before any collective.
      exchangePeerEndpoints(channels, {
        uniqueId: this.uniqueId,
        rails: this.rails,
        timeoutMs: this.options.collectiveTimeoutMs,
        scheduler: this.options.scheduler,
      }).then(
        () => this.run(role, channels),
        (error: unknown) => this.fail(error),
      );
      return;
    }
    this.run(role, channels);
  }

  private run(role: ChannelRole, channels: FrameChannel[]): void {
    if (this.ended) return;
    const { scheduler } = this.options;
    const loop =
      role.kind === 'collective'
        ? collectiveLoop(
            channels,
            {
              uniqueId: this.uniqueId,
              timeoutMs: this.options.collectiveTimeoutMs,
              scheduler,
              disconnectGraceMs: DISCONNECT_GRACE_MS,
              events: this.events,
              slowCollectiveMs: this.options.slowCollectiveMs,
              busyWindow: this.options.busyWindow,
              ...this.lossReport(),
            },
            this.progress,
          )
        : // The heartbeat lease lives on the first rail, which every rank always has.
          p2pRouter(channels, {
            uniqueId: this.uniqueId,
            heartbeatTimeoutMs: role.rail === 0 ? this.options.heartbeatTimeoutMs : null,
            scheduler,
            refuse: (rank, reason) => this.dropRail(channels[rank]!, rank, role.rail, reason),
            bufferLimitBytes: this.options.p2pBufferLimitBytes,
            rail: role.rail,
            events: this.events,
            busyWindow: this.options.busyWindow,
            ...this.lossReport(),
            ...(role.rail === 0 && this.options.faultTolerant ? { onGrowRequest: (rank: number, frame: Frame) => this.grow(rank, frame) } : {}),
          });
    this.running.push(
      loop.subscribe({
        error: (error: unknown) => this.fail(error),
        complete: () => {
          this.loopsLeft -= 1;
          if (this.loopsLeft === 0) this.succeed();
        },
      }),
    );
  }

  private succeed(): void {
    if (this.ended) return;
    this.ended = true;
    this.events.next({ type: 'finished' });
    this.shutdown();
    this.settle.resolve();
  }

  private fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    const message = failureText(error);
    for (const [key, group] of this.groups) {
      group.members.forEach((channel, rank) => {
        // A channel that failed to decode is still writable: it is told why too.
        if (channel === undefined || channel.socket.destroyed || channel.socket.writableEnded) return;
        const sequence = key === 'collective' ? this.progress.sequence : 0n;
        try {
          channel.send(this.abortFrame(message, this.uniqueId, rank, sequence));
        } catch {
          // Already gone: nothing to tell.
        }
      });
    }
    this.events.next({ type: 'failed', error });
    this.shutdown();
    this.settle.reject(error);
  }

  private shutdown(): void {
    for (const subscription of this.running) subscription.unsubscribe();
    for (const group of this.groups.values()) for (const channel of group.members) channel?.finish();
    for (const socket of this.pending) socket.end();
    this.refuseJoiners(this.joiners.handOver(), this.endedBeforeAdmitting);
    this.server.close();
    this.joinReport.unsubscribe();
    for (const deadline of this.rendezvousDeadlines.values()) deadline.unsubscribe();
    this.rendezvousDeadlines.clear();
    this.rejections.complete();
    this.events.complete();
  }

  /** Where the loops report a rank that is gone: only in a fault-tolerant job. */
  private lossReport(): { onRankGone?: (rank: number, reason: string, graceful: boolean) => void } {
    return this.options.faultTolerant ? { onRankGone: (rank, reason, graceful) => this.loseRank(rank, reason, graceful) } : {};
  }

  /**
   * A fault-tolerant job is without `rank` from now on (`graceful`: it left): every other rank
   * still here is told on its first rail (its control channel on tcp_peer), and the rank's
   * connections are dropped, so that a rank that was only stopped cannot come back into a job
   * that went on without it.
   */
  private loseRank(rank: number, reason: string, graceful: boolean): void {
    if (this.ended || this.lost.has(rank)) return;
    if (graceful) {
      // Left: once every rail has delivered what it sent there (each router reports when it has).
      const reports = (this.leftReports.get(rank) ?? 0) + 1;
      this.leftReports.set(rank, reports);
      if (reports < this.p2pChannels) return;
    }
    this.lost.add(rank);
    this.events.next(graceful ? { type: 'rank-left', rank } : { type: 'rank-lost', rank, reason });
    // (The rank itself is among the lost now: it is not told.)
    this.tellFirstRails((destination) => rankLostFrame(this.origin, rank, destination, reason, graceful));
    // A rank that left closes its connections itself, after what it sent (on other rails too).
    if (!graceful) for (const group of this.groups.values()) group.members[rank]?.destroy();
  }

  /** A rail that broke without failing the session: the rank learns why, then it is closed. */
  private dropRail(channel: FrameChannel, rank: number, rail: number, reason: string): void {
    try {
      channel.send(this.abortFrame(`point-to-point rank ${rank} rail ${rail} failed: ${reason}`, this.uniqueId, rank, 0n));
    } catch {
      // Already gone: nothing to tell.
    }
    channel.finish();
  }

  private reject(channel: FrameChannel, reason: RxcclError, uniqueId: UniqueId, rank: number): void {
    this.rejections.next(reason);
    try {
      channel.send(this.abortFrame(`connection rejected: ${reason.message}`, uniqueId, rank, 0n));
    } catch {
      // The stray connection is already gone.
    }
    channel.finish();
    // Do not wait on a peer that never reads: the Abort is best-effort.
    setTimeout(() => channel.destroy(), 1_000).unref();
  }

  private abortFrame(message: string, uniqueId: UniqueId, destination: number, sequence: bigint): OutgoingFrame {
    return outgoing(abortFrame({ uniqueId, worldSize: this.worldSize }, message, { destination, sequence }));
  }

}

function validateConnectionCap(count: number): number {
  if (!Number.isSafeInteger(count) || count < 1) throw new ConfigurationError(`maxUnauthenticatedConnections must be a positive integer, got ${count}`);
  return count;
}

function validateBufferLimit(bytes: number): number {
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new ConfigurationError(`p2pBufferLimitBytes must be a positive integer number of bytes, got ${bytes}`);
  return bytes;
}
