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
import { type Fault, isRankFault, type LinkFault, type RankFault } from './faults.js';
import { memoryJob, type MemoryTraffic } from './memory-job.js';

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
};

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
}

/** An error as a rank observed it: its class, stable code and message. */
export interface ObservedError {
  readonly name: string;
  readonly code: string | undefined;
  readonly message: string;
}

/**
 * What a rank's program came to: `returned` its value, `threw` an error, was `killed` by a fault,
 * or got `stuck` (waiting on something that can never happen, such as a promise of its own).
 */
export type RankOutcome<T> =
  | { readonly rank: number; readonly status: 'returned'; readonly value: T; readonly steps: number }
  | { readonly rank: number; readonly status: 'threw'; readonly error: ObservedError; readonly steps: number }
  | { readonly rank: number; readonly status: 'killed' | 'stuck'; readonly steps: number };

export interface SimulationResult<T> {
  readonly ranks: readonly RankOutcome<T>[];
  /** Virtual time when the last rank finished. */
  readonly virtualTimeMs: number;
  readonly traffic: MemoryTraffic;
}

export function observedError(error: unknown): ObservedError {
  if (error instanceof Error) return { name: error.name, code: (error as { code?: string }).code, message: error.message };
  return { name: typeof error, code: undefined, message: String(error) };
}

/** Runs `program` on every rank of a simulated job; resolves once every rank is done. */
export async function simulateJob<T>(options: SimulateJobOptions, program: (rank: SimulatedRank) => Promise<T>): Promise<SimulationResult<T>> {
  const { worldSize, transport } = options;
  const faults = options.faults ?? [];
  const clock = new VirtualTimeScheduler();
  const timeoutMs = options.timeoutMs ?? 60_000;
  // A fault-tolerant job runs the JS plane, as a real one does.
  const dataPlane = transport === 'tcp_peer' && options.faultTolerant !== true ? (options.dataPlane ?? 'native') : 'js';
  // The job's tuning as a real session resolves it from these options (checked alike: bad groups are refused).
  const tuning = resolveTuning(
    {
      ...(options.algorithm === undefined ? {} : { algorithm: options.algorithm }),
      ...(options.ringThresholdBytes === undefined ? {} : { ringThresholdBytes: options.ringThresholdBytes }),
      ...(options.ringOrder === undefined ? {} : { ringOrder: options.ringOrder }),
      ...(options.ringChannels === undefined ? {} : { ringChannels: options.ringChannels }),
      ...(options.topologyGroups === undefined ? {} : { topologyGroups: options.topologyGroups }),
    },
    worldSize,
    {},
    options.rails ?? 1,
  );
  const job = memoryJob(worldSize, {
    dataPlane,
    ...(options.topologyGroups === undefined ? {} : { topologyGroups: options.topologyGroups }),
    rails: options.rails ?? 1,
    scheduler: clock,
    timeoutMs,
    faults: faults.filter((fault): fault is LinkFault => !isRankFault(fault)),
    faultTolerant: options.faultTolerant === true,
    ...(options.scheduler === undefined ? {} : { interleave: options.scheduler }),
  });
  const sleep = (ms: number) => lastValueFrom(timer(ms, clock), { defaultValue: undefined }).then(() => undefined);
  const outcomes = new Array<RankOutcome<T> | undefined>(worldSize).fill(undefined);
  const steps = new Array<number>(worldSize).fill(0);
  let finished = 0;
  let virtualTimeMs = 0;
  const finish = (outcome: RankOutcome<T>) => {
    if (outcomes[outcome.rank] !== undefined) return;
    outcomes[outcome.rank] = outcome;
    finished += 1;
    virtualTimeMs = clock.now();
  };

  const sessions = job.ranks.map(({ links, context, failure, nativePlane, losses }, rank) => {
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
    const faultsAt = (step: number) => faults.filter((fault): fault is RankFault => isRankFault(fault) && fault.rank === rank && fault.atStep === step);
    const step = async (call: () => Promise<unknown>) => {
      const index = steps[rank]!++;
      for (const fault of faultsAt(index)) {
        if (fault.kind === 'stall') await sleep(fault.ms);
        if (fault.kind === 'abort') {
          // The rank gives up instead of taking its step, and waits for its abort to come back.
          await session.abort(fault.reason ?? `injected at step ${index}`);
          return lastValueFrom(session.failure$);
        }
        if (fault.kind === 'kill') {
          finish({ rank, status: 'killed', steps: index });
          job.kill(rank);
          return new Promise<never>(() => undefined);
        }
      }
      return call();
    };
    const api: Record<string, unknown> = {
      rank,
      worldSize,
      rails: session.rails,
      transport,
      now: () => clock.now(),
      sleep,
      clock,
      split: session.split.bind(session),
      group: session.group.bind(session),
      shrink: session.shrink.bind(session),
    };
    for (const method of STEP_METHODS) {
      api[method] = (...args: unknown[]) => step(() => (session[method] as (...args: unknown[]) => Promise<unknown>).apply(session, args));
    }
    return { session, api: api as SimulatedRank };
  });

  for (const { api } of sessions) {
    const { rank } = api;
    // A program that throws before its first await fails its rank like any other error.
    Promise.resolve(api).then(program).then(
      (value) => finish({ rank, status: 'returned', value, steps: steps[rank]! }),
      (error: unknown) => finish({ rank, status: 'threw', error: observedError(error), steps: steps[rank]! }),
    );
  }

  // The simulation's loop: let every rank run as far as it can, then release one message (the
  // interleaving's pick), else advance the clock to its next timer; nothing left: the rest are stuck.
  for (;;) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (finished === worldSize) break;
    if (options.scheduler !== undefined && options.scheduler.count() > 0) {
      await options.scheduler.waitNext(1);
      continue;
    }
    const next = clock.actions[0];
    if (next === undefined) break;
    clock.maxFrames = next.delay;
    clock.flush();
  }
  for (let rank = 0; rank < worldSize; rank++) finish({ rank, status: 'stuck', steps: steps[rank]! });
  for (const { session } of sessions) await session.close();
  return { ranks: outcomes as RankOutcome<T>[], virtualTimeMs, traffic: job.traffic };
}
