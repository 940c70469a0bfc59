import { concat, defer, mergeMap, type Observable } from 'rxjs';
import { ConfigurationError } from '../errors.js';
import type { Links } from '../transport/links/links.js';
import type { CollectiveContext, CollectiveName, Collectives } from './algorithm.js';
import { descriptorOf } from './descriptor.js';
import { agreeAtCoordinator } from './peer-agreement.js';
import type { LinkAgreement } from './schedule/link-agreement.js';
import { runOnLinks } from './schedule/links-executor.js';
import { runOnPlane } from './schedule/plane-executor.js';
import { stripeOverRails } from './schedule/rail-stripes.js';
import type { CachedSchedule, CallShape } from './schedule/schedule-cache.js';
import type { Schedule, ScheduleOf } from './schedule/schedule.js';
import { SCHEDULED_CALLS, type ScheduledCall, type ScheduledName } from './scheduled-call.js';
import type { AlgorithmRow } from './select.js';

/** Where a scheduled algorithm runs: the event loop over the links, or the native data plane. */
export type SchedulePlane = 'js' | 'native';

/**
 * Runs one call of `collective` by the algorithm whose schedule `writer` writes, on `plane`; emits
 * the call's result. The schedule is written once per call shape (`context.schedules`).
 *
 * - native: one run of the plane; every message carries the collective's header (its descriptor,
 *   the schedule's layout included, and its mesh number), which is the agreement.
 * - js: the schedule over the links, its messages tagged with the collective's number. Where the
 *   session agrees on the mesh, its links carry the agreement too (a header alone to each peer and
 *   to the successor on the ring, ./schedule/link-agreement.ts: the native plane's header); where
 *   it agrees at the coordinator, a PEER_DATA request first (`agreeAtCoordinator`).
 */
export function runScheduled<N extends ScheduledName>(...call: Parameters<typeof startScheduled<N>>): Observable<Collectives[N][1]> {
  return defer(() => startScheduled(...call));
}

/**
 * `runScheduled`'s work, done now: the caller subscribes to what it returns at once (the runner,
 * whose queue calls it in its turn), so the call shape is looked up, the mesh number taken and the
 * run started without the layer `defer` costs every call.
 */
function startScheduled<N extends ScheduledName>(
  collective: N,
  name: string,
  writer: ScheduleOf,
  plane: SchedulePlane,
  links: Links,
  request: Collectives[N][0],
  context: CollectiveContext,
): Observable<Collectives[N][1]> {
  const { rank, worldSize } = context;
  const call = SCHEDULED_CALLS[collective](request as never, rank, worldSize) as ScheduledCall<Collectives[N][1]>;
  const { schedules } = context;
  const shape: CallShape = { collective, algorithm: name, count: call.count, elementType: call.elementType, op: call.op, root: call.root, inPlace: call.inPlace };
  // Written (and, on the native plane, compiled) once per call shape: most calls repeat the last
  // one's, the rest look it up by key.
  const cached = schedules.repeated(shape) ?? lookUp(shape, writer, call, links, context);
  const { schedule } = cached;
  // A fused bucket's layout is the call's, not the shape's: its descriptor is its own.
  const descriptor = call.request.tag === undefined ? cached.descriptor : descriptorOf(call.request, schedule.layout);
  if (plane === 'native') {
    const native = context.nativePlane;
    if (native === null) throw new ConfigurationError(`rank ${rank} has no native data plane to run ${collective} (${name}) on`);
    return runOnPlane(native, context, { number: context.nextMeshSequence(), own: descriptor }, cached.program, call, call.result);
  }
  // The JS plane: on the mesh the schedule's links carry the agreement (`LinkAgreement`); where the
  // session agrees at the coordinator (tcp_host_staged) its PEER_DATA request comes first.
  const run = (sequence: bigint, agreement?: LinkAgreement): Observable<Collectives[N][1]> => {
    const scratch = context.scratch.take(schedule.scratchBytes);
    const wiring = {
      sequence,
      elementType: call.elementType,
      dtype: call.view?.dtype ?? null,
      width: call.width,
      pieceBytes: context.pieceBytes,
      railOrder: context.railOrder,
      waitMs: context.timeoutMs(),
      ...(context.waiting === undefined ? {} : { waiting: context.waiting }),
      ...(agreement === undefined ? {} : { agreement }),
    };
    return concat(
      runOnLinks(links, schedule, { input: call.input, output: call.output, scratch }, wiring),
      defer(() => {
        context.scratch.give(scratch);
        return [call.result()];
      }),
    );
  };
  if (context.agreement === 'mesh') {
    const number = context.nextMeshSequence();
    return run(number, { own: descriptor, number, deadlines: context.deadlines, abort: (reason) => context.abort(reason) });
  }
  return agreeAtCoordinator(context, call.request, schedule.layout).pipe(mergeMap((sequence) => run(sequence)));
}

/** The entry of `shape` by its key, written first if it is new (`prepare`); remembered for the next call. */
function lookUp(shape: CallShape, writer: ScheduleOf, call: ScheduledCall<unknown>, links: Links, context: CollectiveContext): CachedSchedule {
  const { schedules } = context;
  // The cache's generation too: the plane's compiled programs outlive a context (a call queued
  // under the old one may compile after the session saw a new ring), and must not be shared.
  const key = `${schedules.generation} ${shape.collective} ${shape.algorithm} ${shape.count} ${shape.elementType} ${shape.op} ${shape.root} ${shape.inPlace}`;
  const entry = schedules.get(key) ?? prepare(key, writer, call, links, context);
  schedules.remember(shape, entry);
  return entry;
}

/** Writes the call's shape once (`CachedSchedule`), for either plane. */
function prepare(key: string, writer: ScheduleOf, call: ScheduledCall<unknown>, links: Links, context: CollectiveContext): CachedSchedule {
  const { rank, worldSize, railOrder } = context;
  // The shape alone: the entry outlives this call, and must not keep its tensors (nor its result).
  const shape = {
    worldSize,
    count: call.count,
    width: call.width,
    op: call.op,
    root: call.root,
    ringOrder: context.ringOrder,
    ringChannels: context.ringChannels,
    ...(context.topologyGroups === null ? {} : { groups: context.topologyGroups }),
    inPlace: call.inPlace,
  };
  const write = (of: number): Schedule => withRailOrder(railOrder, writer({ rank: of, ...shape }));
  const schedule = write(rank);
  const { rails } = links;
  // On the native plane: over the data links of every rail (the addon compiles the stripes once
  // per shape); the predecessor's schedule says what comes first on its link (withHeaderExchange).
  const program = { key, schedule: (of: number) => stripeOverRails(of === rank ? schedule : write(of), rails, railOrder), elementType: call.elementType };
  return context.schedules.add(key, call.request, schedule, program);
}

/**
 * A rail order other than 0, 1, ... (GX1_RAIL_ORDER) moves every piece to another rail, where
 * ranks without it would not look: it joins the layout (` rails 1,0`), so they are named at the
 * agreement instead.
 */
function withRailOrder(railOrder: readonly number[] | null, schedule: Schedule): Schedule {
  if (railOrder === null || railOrder.every((rail, index) => rail === index)) return schedule;
  return { ...schedule, layout: `${schedule.layout} rails ${railOrder.join(',')}` };
}

/**
 * Runs one call by a row of the algorithm table: its own `run`, or its schedule on its plane. To
 * be subscribed at once: a scheduled row takes its mesh number and starts here.
 */
export function runRow<N extends CollectiveName>(collective: N, row: AlgorithmRow<N>, links: Links, request: Collectives[N][0], context: CollectiveContext): Observable<Collectives[N][1]> {
  if (row.run !== undefined) return row.run(links, request, context);
  return startScheduled(collective as ScheduledName, row.name, row.schedule, row.plane === 'native' ? 'native' : 'js', links, request as never, context) as Observable<Collectives[N][1]>;
}
