/**
 * `simulateJob`: a whole job in one process. Every rank is a real `RankSession` (its validation,
 * collective queue, algorithm table and failure handling) over the in-memory links and coordinator
 * of `memoryJob`, on a virtual clock: a timeout of a minute passes in microseconds, and exactly.
 * Message interleavings are a fast-check scheduler's choice when one is given, so a failing order
 * shrinks and replays from its seed; faults are data (see faults.ts).
 */
import type { Scheduler as InterleaveScheduler } from 'fast-check';
import { lastValueFrom, type SchedulerLike, timer, VirtualTimeScheduler } from 'rxjs';
import { resolveTuning } from '../collectives/tuning.js';
import { RankSession } from '../session/rank-session.js';
import type { AlgorithmPolicy } from '../topology/ring-tuning.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import { ConfigurationError } from '../errors.js';
import { describeMoment, type Fault, isRankFault, type LinkFault, strikesAt } from './faults.js';
import { type HistoryEvent, HistoryRecorder } from './history.js';
import { memoryJob, type MemoryTraffic, snapshotTraffic } from './memory-job.js';
import { processClock } from './process-clock.js';
import { type RankDisk, rankDisk } from './rank-disk.js';

/** The session calls that are a rank's steps (faults strike at steps). */
const STEP_METHODS = [
  'barrier',
  'allReduce',
  'reduce',
  'broadcast',
  'allGather',
  'gather',
  'scatter',
  'reduceScatter',
  'allToAll',
  'allToAllV',
  'send',
  'receive',
  'exchange',
  'setTimeout',
  'abort',
] as const;

type StepMethod = (typeof STEP_METHODS)[number];

/**
 * What a program gets for its rank: the session's API, plus the virtual clock. `split`, `group` and
 * `shrink` give communicators (whole sessions: their calls are not steps, faults strike at the
 * world's calls).
 */
export type SimulatedRank = Pick<RankSession, 'rank' | 'worldSize' | 'rails' | 'transport' | StepMethod | 'split' | 'group' | 'shrink'> & {
  /** Virtual milliseconds since the job started. */
  now(): number;
  /** Waits `ms` of virtual time (a rank doing its own work). */
  sleep(ms: number): Promise<void>;
  /**
   * The job's virtual clock as an RxJS scheduler: the program's own timers on it
   * (`timer(500, rank.clock)`, `timeout({ first: 1_000, scheduler: rank.clock })`) run in virtual
   * time with the job's, so a failure detector or a retry loop is simulated exactly too.
   */
  readonly clock: SchedulerLike;
  /**
   * A named point in the program where a rank fault may strike (`{ kind: 'kill', rank, atPoint:
   * 'saved' }`): between two writes of a checkpoint, after a reply is sent and before it is
   * logged. Not a step; without a fault there, it returns at once.
   */
  faultPoint(name: string): Promise<void>;
  /**
   * Runs `run` as operation `f(input)` and records it in the job's history (`result.history`):
   * an invoke now, an ok with its output when it returns, an info when its outcome is unknown.
   * `checkLinearizable(result.history, model)` then judges the history.
   */
  operation<R>(f: string, input: unknown, run: () => Promise<R>): Promise<R>;
  /** What this rank keeps across restarts of the job (see `restarts`). */
  readonly disk: RankDisk;
  /** Which run of the job this is: 0, then 1 after the first restart (torchrun's restart count). */
  readonly generation: number;
};

/** The job `simulateJob` runs: its size, transport, faults, restarts and settings. */
export interface SimulateJobOptions {
  readonly worldSize: number;
  /** Parallel links between every pair of ranks (default 1). */
  readonly rails?: number;
  readonly transport: CollectiveTransport;
  /**
   * tcp_peer: who moves collective data. `native` (the default, as in a real job) runs every
   * scheduled collective on a model of the native data plane (`memoryDataPlane`); `js` on the
   * event loop over the links.
   */
  readonly dataPlane?: 'native' | 'js';
  /** GX1_COLLECTIVE_ALGORITHM: auto (default), direct, ring or hierarchical (with `topologyGroups`). */
  readonly algorithm?: AlgorithmPolicy;
  readonly ringOrder?: readonly number[];
  readonly ringChannels?: number;
  /** GX1_TOPOLOGY_GROUPS: the groups hierarchical collectives follow ([[0, 1], [2, 3]]), checked as the variable is. */
  readonly topologyGroups?: TopologyGroups;
  readonly ringThresholdBytes?: number;
  /** The session timeout, in virtual milliseconds (default 60 s). */
  readonly timeoutMs?: number;
  readonly faults?: readonly Fault[];
  /** fast-check's `fc.scheduler()`: it picks the order of every message delivery. */
  readonly scheduler?: InterleaveScheduler;
  /**
   * A fault-tolerant job (as `rxccl launch --keep-going`): a `kill` fault does not end it; the
   * other ranks' communicators with the killed rank fail with `RankLostError`, and `shrink()` goes on.
   */
  readonly faultTolerant?: boolean;
  /**
   * How many times the job restarts when a rank fails (killed, or its program threw; default 0),
   * as `torchrun --max-restarts` restarts its worker group: every rank's program starts again, a
   * new generation (`rank.generation`), with new links and sessions and only its `rank.disk`
   * kept. Virtual time runs on. Not with `faultTolerant`, the other answer to a killed rank.
   */
  readonly restarts?: number;
  /**
   * Virtual ms between a rank's failure and the stop of the others for the restart (default 0:
   * at once), as torchrun's agent notices a failed worker within its monitor interval and only
   * then stops the group: meanwhile the others run on (and may save a newer checkpoint).
   */
  readonly restartDelayMs?: number;
  /**
   * Virtual ms since the job started after which a rank still running is `stuck` (default one
   * hour): a program whose own timers never stop (a heartbeat `interval`) would otherwise keep
   * the simulation going for ever.
   */
  readonly horizonMs?: number;
}

/** One restart of a simulated job: what ended its generation, and how that generation's ranks stood. */
export interface JobRestart<T> {
  /** The generation that ended (the next one is `generation + 1`). */
  readonly generation: number;
  /** The rank whose failure restarted the job, and what it was: `killed at step 3`, `threw TIMEOUT: ...`. */
  readonly rank: number;
  readonly cause: string;
  /** When the generation was stopped. */
  readonly virtualTimeMs: number;
  /** The ranks as they stood: the failed one `killed` or `threw`, the others mostly `stopped`. */
  readonly ranks: readonly RankOutcome<T>[];
  /** That generation's traffic, as it stood when it was stopped. */
  readonly traffic: MemoryTraffic;
}

/** An error as a rank observed it: its class, stable code and message. */
export interface ObservedError {
  readonly name: string;
  readonly code: string | undefined;
  readonly message: string;
}

/**
 * What a rank's program came to: `returned` its value, `threw` an error, was `killed` by a fault,
 * got `stuck` (waiting on something that can never happen, such as a promise of its own), or was
 * `stopped` with its worker group for a restart (in `JobRestart.ranks` only).
 */
export type RankOutcome<T> =
  | { readonly rank: number; readonly status: 'returned'; readonly value: T; readonly steps: number }
  | { readonly rank: number; readonly status: 'threw'; readonly error: ObservedError; readonly steps: number }
  | { readonly rank: number; readonly status: 'killed' | 'stuck' | 'stopped'; readonly steps: number };

/** What `simulateJob` observed: each rank's outcome, the traffic, restarts and the history. */
export interface SimulationResult<T> {
  /** Each rank's outcome, by rank. */
  readonly ranks: readonly RankOutcome<T>[];
  /** Virtual time when the last rank finished. */
  readonly virtualTimeMs: number;
  /** The last generation's traffic. */
  readonly traffic: MemoryTraffic;
  /** The job's restarts, first to last (empty unless `restarts` let a killed rank restart it). */
  readonly restarts: readonly JobRestart<T>[];
  /** Every `rank.operation` of every generation, as invoke / ok / info events in one order. */
  readonly history: readonly HistoryEvent[];
}

/** An error as a result records it: name, code and message (comparable with `toEqual`). */
export function observedError(error: unknown): ObservedError {
  if (error instanceof Error) return { name: error.name, code: (error as { code?: string }).code, message: error.message };
  return { name: typeof error, code: undefined, message: String(error) };
}


/** Runs `program` on every rank of a simulated job; resolves once every rank is done. */
export async function simulateJob<T>(options: SimulateJobOptions, program: (rank: SimulatedRank) => Promise<T>): Promise<SimulationResult<T>> {
  const restartsAllowed = checkOptions(options);
  // The job's tuning as a real session resolves it from these options (checked alike: bad groups are refused).
  const tuning = resolveTuning(
    {
      ...(options.algorithm === undefined ? {} : { algorithm: options.algorithm }),
      ...(options.ringThresholdBytes === undefined ? {} : { ringThresholdBytes: options.ringThresholdBytes }),
      ...(options.ringOrder === undefined ? {} : { ringOrder: options.ringOrder }),
      ...(options.ringChannels === undefined ? {} : { ringChannels: options.ringChannels }),
      ...(options.topologyGroups === undefined ? {} : { topologyGroups: options.topologyGroups }),
    },
    options.worldSize,
    {},
    options.rails ?? 1,
  );
  const clock = new VirtualTimeScheduler();
  const job: JobState = {
    clock,
    disks: Array.from({ length: options.worldSize }, () => new Map<string, unknown>()),
    history: new HistoryRecorder(() => clock.now()),
    tuning,
  };
  const restarts: JobRestart<T>[] = [];
  for (let generation = 0; ; generation++) {
    const run = await runGeneration(options, job, generation, generation < restartsAllowed, program);
    if (run.failed === null) return { ranks: run.ranks, virtualTimeMs: run.virtualTimeMs, traffic: run.traffic, restarts, history: job.history.events };
    restarts.push({ generation, ...run.failed, virtualTimeMs: run.virtualTimeMs, ranks: run.ranks, traffic: run.traffic });
  }
}

/** Checks a job's restart options and rank faults (a fault that could never strike is a mistake); returns the restarts it allows. */
function checkOptions(options: SimulateJobOptions): number {
  const restarts = options.restarts ?? 0;
  if (!Number.isInteger(restarts) || restarts < 0) throw new ConfigurationError(`simulateJob: restarts must be a whole number >= 0, got ${String(options.restarts)}`);
  if (restarts > 0 && options.faultTolerant === true) {
    throw new ConfigurationError('simulateJob: restarts and faultTolerant are two answers to a killed rank (restart the job, or go on without it): choose one');
  }
  const horizon = options.horizonMs ?? DEFAULT_HORIZON_MS;
  if (!(horizon > 0 && Number.isFinite(horizon))) throw new ConfigurationError(`simulateJob: horizonMs must be a finite number > 0, got ${String(horizon)}`);
  const delay = options.restartDelayMs ?? 0;
  if (!(delay >= 0 && Number.isFinite(delay))) throw new ConfigurationError(`simulateJob: restartDelayMs must be a finite number >= 0, got ${String(delay)}`);
  for (const fault of options.faults ?? []) {
    if (!isRankFault(fault)) continue;
    const text = JSON.stringify(fault);
    if ((fault.atStep === undefined) === (fault.atPoint === undefined)) throw new ConfigurationError(`simulateJob: fault ${text} needs one moment: atStep, or atPoint (with occurrence)`);
    if (fault.atStep !== undefined && !(Number.isInteger(fault.atStep) && fault.atStep >= 0)) throw new ConfigurationError(`simulateJob: fault ${text}: atStep must be a whole number >= 0`);
    if (fault.occurrence !== undefined && !(Number.isInteger(fault.occurrence) && fault.occurrence >= 0)) throw new ConfigurationError(`simulateJob: fault ${text}: occurrence must be a whole number >= 0`);
    const generation = fault.generation ?? 0;
    if (!Number.isInteger(generation) || generation < 0 || generation > restarts) {
      throw new ConfigurationError(`simulateJob: fault ${text} names generation ${generation}, which never runs: the job has generations 0..${restarts} (restarts: ${restarts})`);
    }
    if (!Number.isInteger(fault.rank) || fault.rank < 0 || fault.rank >= options.worldSize) {
      throw new ConfigurationError(`simulateJob: fault ${text} names rank ${fault.rank}, outside world size ${options.worldSize}`);
    }
  }
  return restarts;
}

/** What outlives a generation of a job: its clock, the ranks' disks, the history. */
interface JobState {
  readonly clock: VirtualTimeScheduler;
  readonly disks: Map<string, unknown>[];
  readonly history: HistoryRecorder;
  readonly tuning: ReturnType<typeof resolveTuning>;
}

interface GenerationRun<T> {
  readonly ranks: RankOutcome<T>[];
  readonly virtualTimeMs: number;
  readonly traffic: MemoryTraffic;
  /** The failure that restarts the job, or null where the generation ran to its end. */
  readonly failed: { readonly rank: number; readonly cause: string } | null;
}

/** How long a job may run before a rank still running is stuck (`horizonMs`): one virtual hour. */
const DEFAULT_HORIZON_MS = 3_600_000;

/** A promise that never settles: what a call of a process that is gone returns. */
const never = () => new Promise<never>(() => undefined);

/**
 * Wraps a communicator (a whole session of some ranks) so that, like the rank's own calls,
 * nothing of it comes back to a process that is gone; communicators it makes are wrapped alike.
 */
function guarded<S>(session: S, alive: () => boolean, guard: <R>(call: () => Promise<R>) => Promise<R>): S {
  // A split's null (a rank outside every color) and other results pass as they are.
  if (session === null || typeof session !== 'object' || !('allReduce' in session)) return session;
  return new Proxy(session, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        // A process that is gone calls nothing (its communicator would still send).
        if (!alive()) return never();
        const result = (value as (...args: unknown[]) => unknown).apply(target, args);
        if (!(result instanceof Promise)) return result;
        // Handled here too: a process that is gone never hears of its failure.
        result.catch(() => undefined);
        return guard(() => result.then((settled: unknown) => guarded(settled, alive, guard)));
      };
    },
  });
}

/**
 * One generation of the job: every rank's program over new links and sessions, until every rank
 * is done, or, where `restartOnFailure`, until a rank fails (killed, or its program threw) and
 * `restartDelayMs` has passed: the others are then stopped, as torchrun's agent stops its worker
 * group, and nothing they would still do happens.
 */
async function runGeneration<T>(
  options: SimulateJobOptions,
  job: JobState,
  generation: number,
  restartOnFailure: boolean,
  program: (rank: SimulatedRank) => Promise<T>,
): Promise<GenerationRun<T>> {
  const { worldSize, transport } = options;
  const { clock, history, tuning } = job;
  const faults = options.faults ?? [];
  const timeoutMs = options.timeoutMs ?? 60_000;
  const horizonMs = options.horizonMs ?? DEFAULT_HORIZON_MS;
  // The model's native plane has no lost peers' links to end: a fault-tolerant job runs the JS plane here.
  const dataPlane = transport === 'tcp_peer' && options.faultTolerant !== true ? (options.dataPlane ?? 'native') : 'js';
  const memory = memoryJob(worldSize, {
    dataPlane,
    ...(options.topologyGroups === undefined ? {} : { topologyGroups: options.topologyGroups }),
    rails: options.rails ?? 1,
    scheduler: clock,
    timeoutMs,
    faults: faults.filter((fault): fault is LinkFault => !isRankFault(fault)),
    faultTolerant: options.faultTolerant === true,
    ...(options.scheduler === undefined ? {} : { interleave: options.scheduler }),
    ...((options.restarts ?? 0) > 0 ? { labelPrefix: `gen ${generation} ` } : {}),
  });
  const outcomes = new Array<RankOutcome<T> | undefined>(worldSize).fill(undefined);
  const steps = new Array<number>(worldSize).fill(0);
  let finished = 0;
  let virtualTimeMs = 0;
  let failed: GenerationRun<T>['failed'] = null;
  /** Set once the group is stopped for a restart: every process of this generation is gone. */
  let stopped = false;
  /** Whether rank `rank`'s process of this generation still runs. */
  const alive = (rank: number) => outcomes[rank] === undefined && !stopped;
  const finish = (outcome: RankOutcome<T>, note: string) => {
    if (outcomes[outcome.rank] !== undefined) return;
    outcomes[outcome.rank] = outcome;
    finished += 1;
    virtualTimeMs = clock.now();
    // What the program left running has no outcome now.
    history.end(outcome.rank, generation, note);
  };
  /** A rank failed: with restarts left, the group is stopped (at once, or after the agent's delay). */
  const failing = (rank: number, cause: string) => {
    if (!restartOnFailure || failed !== null) return;
    failed = { rank, cause };
    const delay = options.restartDelayMs ?? 0;
    if (delay === 0) stopped = true;
    else clock.schedule(() => (stopped = true), delay);
  };

  const sessions = memory.ranks.map(({ links, context, failure, nativePlane, losses }, rank) => {
    const rankClock = processClock(clock, () => alive(rank));
    const sleep = (ms: number) => lastValueFrom(timer(ms, rankClock), { defaultValue: undefined }).then(() => undefined);
    const session = RankSession.over({
      losses,
      nativePlane,
      // One host, as a job simulated in one process stands for.
      ranksShareHost: true,
      rank,
      worldSize,
      transport,
      links,
      coordinator: { exchange: (request, parts) => context.coordinate(request, parts), close: () => undefined },
      failure,
      tuning,
      timeoutMs,
      scheduler: clock,
    });
    /** A call into the kit: nothing comes back to a process that is gone. */
    const guard = <R>(call: () => Promise<R>): Promise<R> => {
      if (!alive(rank)) return never();
      return call().then(
        (value) => (alive(rank) ? value : never()),
        (error: unknown) => (alive(rank) ? Promise.reject(error) : never()),
      );
    };
    /** Runs the rank faults that strike at `moment`, in order; resolves when the rank goes on (an abort rejects, a kill never settles). */
    const strike = async (moment: Parameters<typeof strikesAt>[2]): Promise<void> => {
      for (const fault of faults) {
        if (!isRankFault(fault) || fault.rank !== rank || !strikesAt(fault, generation, moment)) continue;
        if (fault.kind === 'stall') await sleep(fault.ms);
        if (fault.kind === 'abort') {
          // The rank gives up instead of taking its step, and waits for its abort to come back.
          await session.abort(fault.reason ?? `injected at ${describeMoment(fault)}`);
          await lastValueFrom(session.failure$);
        }
        if (fault.kind === 'kill') {
          // Killed as it starts a step: the steps it took are those before.
          finish({ rank, status: 'killed', steps: 'step' in moment ? moment.step : steps[rank]! }, 'killed');
          failing(rank, `killed at ${describeMoment(fault)}`);
          memory.kill(rank);
          return never();
        }
      }
    };
    const occurrences = new Map<string, number>();
    const api: Record<string, unknown> = {
      rank,
      worldSize,
      rails: session.rails,
      transport,
      generation,
      disk: rankDisk(job.disks[rank]!, () => alive(rank)),
      now: () => clock.now(),
      sleep: (ms: number) => guard(() => sleep(ms)),
      clock: rankClock,
      faultPoint: (name: string) => {
        if (typeof name !== 'string' || name === '') return Promise.reject(new ConfigurationError(`rank ${rank}: faultPoint needs a name (a non-empty string), got ${JSON.stringify(name)}`));
        const occurrence = occurrences.get(name) ?? 0;
        occurrences.set(name, occurrence + 1);
        return guard(() => strike({ point: name, occurrence }));
      },
      operation: (f: string, input: unknown, run: () => Promise<unknown>) => guard(() => history.record(rank, generation, f, input, run, () => alive(rank))),
    };
    // Communicators come guarded like the rank's own calls.
    const guardedSession = guarded(session, () => alive(rank), guard);
    for (const method of ['split', 'group', 'shrink'] as const) api[method] = guardedSession[method];
    for (const method of STEP_METHODS) {
      api[method] = (...args: unknown[]) =>
        guard(async () => {
          await strike({ step: steps[rank]++ });
          return (session[method] as (...args: unknown[]) => Promise<unknown>).apply(session, args);
        });
    }
    return { session, api: api as SimulatedRank };
  });

  for (const { api } of sessions) {
    const { rank } = api;
    // A program that throws before its first await fails its rank like any other error.
    Promise.resolve(api).then(program).then(
      (value) => alive(rank) && finish({ rank, status: 'returned', value, steps: steps[rank]! }, 'returned first'),
      (error: unknown) => {
        if (!alive(rank)) return;
        const observed = observedError(error);
        finish({ rank, status: 'threw', error: observed, steps: steps[rank]! }, 'threw first');
        failing(rank, `threw ${observed.code ?? observed.name}: ${observed.message}`);
      },
    );
  }

  // The simulation's loop: let every rank run as far as it can, then release one message (the
  // interleaving's pick), else advance the clock to its next timer; nothing left: the rest are stuck.
  for (;;) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (finished === worldSize || stopped) break;
    if (options.scheduler !== undefined && options.scheduler.count() > 0) {
      await options.scheduler.waitNext(1);
      continue;
    }
    const next = clock.actions[0];
    if (next === undefined || next.delay > horizonMs) break;
    clock.maxFrames = next.delay;
    clock.flush();
  }
  // A failure restarts the job even where the others ended (or stuck) before the agent's delay.
  if (failed !== null) stopped = true;
  // Stopped for a restart: the others are stopped with their group. Else they are stuck.
  for (let rank = 0; rank < worldSize; rank++) finish({ rank, status: stopped ? 'stopped' : 'stuck', steps: steps[rank]! }, stopped ? 'restarted' : 'stuck');
  if (stopped) {
    memory.stop();
    // What is still on the clock is the stopped generation's (its sessions', its programs'
    // timers): gone with it, so that the next generation's time is its own.
    for (const action of [...clock.actions]) action.unsubscribe();
  }
  for (const { session } of sessions) await session.close();
  return { ranks: outcomes as RankOutcome<T>[], virtualTimeMs, traffic: stopped ? snapshotTraffic(memory.traffic) : memory.traffic, failed: stopped ? failed : null };
}
