import { Observable, type SchedulerLike, type Subject, type Subscriber, tap, throwError } from 'rxjs';
import type { CollectiveContext, CollectiveName, Collectives } from '../collectives/algorithm.js';
import { runRow } from '../collectives/run-scheduled.js';
import { type AlgorithmRow, type Plane, selectAlgorithm, type Situation } from '../collectives/select.js';
import type { CollectiveTuning } from '../collectives/tuning.js';
import type { WaitingRanks } from '../collectives/waiting-ranks.js';
import { debugLog } from '../diagnostics/debug-log.js';
import type { EventLogger } from '../diagnostics/log-events.js';
import { ChannelClosedError } from '../errors.js';
import type { SessionLinks } from '../transport/links/links.js';
import { LazyDeadline } from '../transport/lazy-deadlines.js';
import type { SessionFailure } from '../transport/session-failure.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import { CollectiveQueue } from './collective-queue.js';
import type { EventLoopHold } from './event-loop-hold.js';
import type { SessionEvent } from './events.js';

type WaitingEvent = Extract<SessionEvent, { type: 'collective-waiting' }>;

/** What a session's collectives run on. */
export interface RunnerParts {
  readonly transport: CollectiveTransport;
  readonly links: SessionLinks;
  /** The session's context now (a frozen value the session replaces as it learns its job): each call takes it once, when made. */
  readonly context: () => CollectiveContext;
  readonly tuning: CollectiveTuning;
  /** Where this session's scheduled collectives run. */
  readonly plane: Plane;
  /** Every rank shares this rank's host (see `Situation`). */
  readonly ranksShareHost: boolean;
  readonly failure: SessionFailure;
  readonly loop: EventLoopHold;
  readonly events: Subject<SessionEvent>;
  /** Where the context's waits say whom they wait for. */
  readonly waiting: WaitingRanks;
  /** After how long, and again every as long, a collective still waiting for ranks says so (below the collective timeout). */
  readonly slowCollectiveMs: number;
  /** Where the waiting warnings are written (the debug log at `warn`), null when it is off. */
  readonly warnings: EventLogger<WaitingEvent> | null;
  /** Whose clock `slowCollectiveMs` and the waited time are on. */
  readonly scheduler: SchedulerLike;
  /** What a call after `close()` is refused with (`rank 0 session closed`, `rank 1 of communicator 0x... closed`). */
  readonly closedText: string;
}

/**
 * A session's ordered operations: each collective (and `setTimeout`, `exchange`) queued in call
 * order, run one at a time by the algorithm and plane the table picks for it, ended by the
 * session's failure, and reported on the session's events; a collective that waits long for
 * ranks no coordinator sees it wait for is reported as waiting (`watched`).
 */
export class CollectiveRunner {
  private readonly queue = new CollectiveQueue();
  /** Ordered operations submitted so far: the next one's `sequence` in events. */
  private submitted = 0;
  /** The (collective, algorithm, plane) choices already named on the debug log. */
  private readonly named = new Set<string>();
  /** The last choice made (`choose`): calls repeat their collective and size. */
  private lastChoice: { readonly collective: CollectiveName; readonly bytes: number; readonly context: CollectiveContext; readonly row: AlgorithmRow<CollectiveName> } | null = null;
  private closed = false;

  constructor(private readonly parts: RunnerParts) {}

  /**
   * Validates (now: a bad argument is an error of the returned Observable and nothing is sent),
   * then queues the collective; when its turn comes it runs by the row the table picks for its
   * size, and its result is handed back as `finish` makes it (the caller's form: its tensor type,
   * its output memory). Hot: the call submits it exactly once, whoever listens.
   */
  submit<N extends CollectiveName, R = Collectives[N][1]>(
    collective: N,
    validate: () => Collectives[N][0],
    bytes: number | (() => number),
    finish?: (result: Collectives[N][1]) => R,
  ): Observable<R> {
    let request: Collectives[N][0];
    try {
      if (this.closed) throw new ChannelClosedError(this.parts.closedText);
      request = validate();
    } catch (error) {
      return throwError(() => error);
    }
    const { links, events } = this.parts;
    // One context for the choice and the run: a topology, groups or profile the session takes
    // later never changes a call already made.
    const context = this.parts.context();
    const size = typeof bytes === 'number' ? bytes : bytes();
    const row = this.choose(collective, size, context);
    // The native data plane's thread waits for the data itself: an event loop polling beside it
    // only takes a core from it.
    const watch = (sequence: number, subscriber: Subscriber<unknown>) => this.watch(subscriber, context, sequence, collective, row);
    return this.queued((sequence) => {
      const run = runRow(collective, row, links, request, context);
      // Events cost an allocation and a clock read per collective: only when someone listens.
      if (!events.observed) return run;
      const base = { sequence, collective, algorithm: row.name, plane: row.plane };
      events.next({ type: 'collective-started', ...base, bytes: size });
      const started = performance.now();
      return run.pipe(
        tap({
          complete: () => events.next({ type: 'collective-finished', ...base, bytes: size, durationMs: performance.now() - started }),
          error: (error: unknown) => events.next({ type: 'collective-failed', ...base, error }),
        }),
      );
    }, row.plane !== 'native', watch, finish);
  }

  /**
   * Reports the collective `subscriber` runs every `slowCollectiveMs` while its waits name ranks
   * they wait for (`WaitingRanks`): where no coordinator sees a collective (on the mesh, the JS
   * plane's links, the native plane), the rank itself says which collective waits for whom, as the
   * coordinator does for those it routes. Not at or past the collective timeout (as it is when the
   * collective runs), which names them in its error. Called once the collective started and did
   * not end at once: its time is counted from here.
   */
  private watch(subscriber: Subscriber<unknown>, context: CollectiveContext, sequence: number, collective: CollectiveName, row: AlgorithmRow<CollectiveName>): void {
    const { waiting, slowCollectiveMs, scheduler, warnings, events } = this.parts;
    if (slowCollectiveMs >= context.timeoutMs()) return;
    const started = scheduler.now();
    const slow = new LazyDeadline(context.deadlines, () => {
      slow.set(slowCollectiveMs);
      const missing = waiting.missing();
      if (missing.length === 0) return;
      const event: WaitingEvent = { type: 'collective-waiting', sequence, collective, algorithm: row.name, plane: row.plane, waitedMs: scheduler.now() - started, missing };
      warnings?.write(event);
      if (events.observed) events.next(event);
    });
    slow.set(slowCollectiveMs);
    subscriber.add(() => slow.clear());
  }

  /**
   * The row the table picks for a call of `collective` of `bytes` under `context`: the choice
   * depends on nothing else (the context is a frozen value, replaced when the session learns
   * more), so a call like the last one takes the last one's row without pricing the candidates again.
   */
  private choose<N extends CollectiveName>(collective: N, bytes: number, context: CollectiveContext): AlgorithmRow<N> {
    const last = this.lastChoice;
    if (last !== null && last.collective === collective && last.bytes === bytes && last.context === context) return last.row as AlgorithmRow<N>;
    const row = selectAlgorithm(collective, this.situation(bytes, context));
    this.nameChoice(collective, row, bytes, context.rank);
    this.lastChoice = { collective, bytes, context, row: row as AlgorithmRow<CollectiveName> };
    return row;
  }

  /** What a call of `bytes` is chosen in (`selectAlgorithm`), by `context` (default the session's now): the same for `plan` as for the call. */
  situation(bytes: number, context: CollectiveContext = this.parts.context()): Situation {
    const { transport, plane, tuning, ranksShareHost } = this.parts;
    const { worldSize, topologyGroups: groups, topology, ringOrder, profile } = context;
    return { transport, plane, worldSize, bytes, tuning, ranksShareHost, groups, groupsAreHosts: context.groupsAreHosts === true, topology, ringOrder, profile };
  }

  /**
   * Runs `work` in the collective queue, ending with the session's failure if that comes first.
   * `work` gets the operation's place in the call order (its `sequence` in events); `busyPoll`
   * false keeps the event loop from polling while it runs (see `EventLoopHold`); `stillRunning`
   * is told of it once it started and did not end at once; `finish` makes the result (`submit`).
   */
  queued<T, R = T>(work: (sequence: number) => Observable<T>, busyPoll = true, stillRunning?: (sequence: number, subscriber: Subscriber<T>) => void, finish?: (value: T) => R): Observable<R> {
    const sequence = this.submitted++;
    const { loop, failure } = this.parts;
    // One hand-written layer for defer + loop.during() + failure.untilEnded() and the slow
    // collective's watch: every collective passes here.
    return this.queue.submit(
      new Observable<T>((subscriber) => {
        loop.hold(subscriber, busyPoll);
        failure.enroll(subscriber);
        subscriber.add(work(sequence).subscribe(subscriber));
        // Most small collectives are over before their call returns (the native plane runs them
        // on this thread first).
        if (!subscriber.closed) stillRunning?.(sequence, subscriber);
      }),
      finish,
    );
  }

  /** Takes no more collectives; what is queued ends with the session's failure. */
  close(): void {
    this.closed = true;
    this.queue.close();
  }

  /**
   * Says on the debug log (info) which algorithm and plane a collective takes, the first time it
   * takes them (a size that changes the choice says so again).
   */
  private nameChoice(collective: CollectiveName, row: AlgorithmRow<CollectiveName>, bytes: number, rank: number): void {
    if (!debugLog.enabled('info')) return;
    const choice = `${collective} ${row.name} ${row.plane}`;
    if (this.named.has(choice)) return;
    this.named.add(choice);
    debugLog.info(`rank ${rank} ${collective} of ${bytes} bytes runs ${row.name} on the ${row.plane === 'js' ? 'JS' : row.plane} plane`);
  }
}
