import { defer, map, NEVER, Observable, of, throwError } from 'rxjs';
import { ConfigurationError, failureText, ProtocolError, RemoteAbortError, TimeoutError } from '../errors.js';
import type { DataPlane, NativeAllReduce, NativeOutcome, PlaneCall } from '../transport/data-plane.js';
import type { Links } from '../transport/links/links.js';
import type { OperationDescriptor } from '../protocol/agreement.js';
import { type Opcode, opcodeName } from '../protocol/opcode.js';
import { reduceOpCode } from '../protocol/reduce-op.js';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import type { CollectiveContext, ReductionRequest } from './algorithm.js';
import { checkAgreement, descriptorOf } from './exchange-message.js';
import { shaped } from './staged.js';

/**
 * What every algorithm of the native family (lib/collectives/<collective>/native.ts) shares: the
 * data plane it runs on, its header, and how the engine's outcome ends it.
 */

/** The session's native data plane (the table picks a native row only where there is one). */
export function dataPlaneOf(links: Links): DataPlane {
  const plane = links.dataPlane;
  if (!plane) throw new ConfigurationError(`rank ${links.rank} has no native data plane (dataPlane: 'native', tcp_peer)`);
  return plane;
}

/**
 * A collective on the native data plane, as its algorithm sees it: the mesh agreement's number and
 * descriptor, which every one of its messages carries as its header (docs/protocol.md 9.9).
 */
export interface NativeCollective {
  readonly number: bigint;
  readonly own: OperationDescriptor;
}

/** Takes the next mesh collective number for `request` (unless given). */
export function nativeCollective(context: CollectiveContext, request: CollectiveRequest, layout = '', sequence?: bigint): NativeCollective {
  return { number: sequence ?? context.nextMeshSequence(), own: descriptorOf(request, layout) };
}

/**
 * One header-only message between every pair of ranks on the data links, each header checked by
 * its receiver: a barrier, and the agreement of every collective that does not run on the plane
 * (`agreeOnDataPlane`).
 */
export function exchangeHeaders(plane: DataPlane, context: CollectiveContext, collective: NativeCollective): Observable<void> {
  return runOnPlane(context, collective, (call) => plane.exchange({ ...call, sends: [], receives: [] }), () => undefined);
}

/**
 * Runs `collective` on the plane (`start`, given its header and timeout: one engine call) and
 * settles it (`settleNative`) with `result`.
 */
export function runOnPlane<T>(context: CollectiveContext, collective: NativeCollective, start: (call: PlaneCall) => Observable<NativeOutcome | undefined>, result: () => T): Observable<T> {
  const call = { descriptor: collective.own, sequence: collective.number, timeoutMs: context.timeoutMs() };
  // Hand-written rather than mergeMap + of: every small collective passes here, and a done one
  // (nearly all) needs no inner Observable.
  return new Observable<T>((subscriber) =>
    start(call).subscribe({
      next: (outcome) => {
        if (outcome !== undefined && outcome.kind !== 'done') {
          subscriber.add(settleNative(outcome, context, collective, result).subscribe(subscriber));
          return;
        }
        subscriber.next(result());
        subscriber.complete();
      },
      error: (error: unknown) => subscriber.error(error),
    }),
  );
}

/**
 * A reduction on the plane, one engine allReduce call (the all-reduce and the reduce-scatter):
 * `request`'s tensor under `opcode`, with `schedule` (NativeAllReduce's `pairwise`, `scatter`);
 * emits the result, `resultBytes` long, in `request.output`, else in fresh memory.
 */
export function reduceOnPlane(
  links: Links,
  request: ReductionRequest,
  context: CollectiveContext,
  opcode: Opcode,
  resultBytes: number,
  schedule: Pick<NativeAllReduce, 'pairwise' | 'scatter'>,
): Observable<Uint8Array> {
  return defer(() => {
    const plane = dataPlaneOf(links);
    const { view } = request;
    const reduceOp = reduceOpCode(request.op);
    const collective = nativeCollective(context, shaped(opcode, view, { reduceOp }));
    const output = request.output ?? new Uint8Array(resultBytes);
    // One literal of one shape, no spreads: a spread of differently shaped objects costs microseconds.
    const start = (call: PlaneCall) =>
      plane.allReduce({
        descriptor: call.descriptor,
        sequence: call.sequence,
        timeoutMs: call.timeoutMs,
        pairwise: schedule.pairwise,
        scatter: schedule.scatter,
        elementType: view.elementType,
        reduceOp,
        input: view.bytes,
        output,
        count: view.count,
      });
    return runOnPlane(context, collective, start, () => output);
  });
}

/** `bytes` cut in `worldSize` equal slots, by rank (views, no copy). */
export function rankSlots(bytes: Uint8Array, worldSize: number): Uint8Array[] {
  const size = bytes.length / worldSize;
  return Array.from({ length: worldSize }, (_, rank) => bytes.subarray(rank * size, (rank + 1) * size));
}

/** An array of `worldSize` entries, `entry` at `rank`, `rest` everywhere else. */
export function byRank<T, R = undefined>(worldSize: number, rank: number, entry: T, rest?: R): (T | R)[] {
  const entries = new Array<T | R>(worldSize).fill(rest as R);
  entries[rank] = entry;
  return entries;
}

/**
 * The agreement of a collective that does not run on the native data plane, in a session that has
 * one: its header exchanged on the data links first (`exchangeHeaders`, with its layout), then its
 * own messages on the mesh. Every collective of the session then meets every other at a header
 * comparison, so a rank in a native collective and a rank in another one are named as a mismatch
 * (docs/protocol.md 9.9), not left to time out. Emits the collective's mesh number.
 */
export function agreeOnDataPlane(plane: DataPlane, context: CollectiveContext, request: CollectiveRequest, layout: string, sequence?: bigint): Observable<bigint> {
  return defer(() => {
    const collective = nativeCollective(context, request, layout, sequence);
    return exchangeHeaders(plane, context, collective).pipe(map(() => collective.number));
  });
}

/**
 * What a collective agreed at the coordinator (staged, `session.exchange`, `setTimeout`) says on
 * the data links of a native session before it goes there: its opcode and root alone, since ranks
 * of one such collective may legitimately differ in the rest (a scatter's non-roots may not know
 * the type) and the coordinator checks it all. Enough for a rank in it and a rank in a collective
 * of the plane to be named as a mismatch at once, rather than each timing out on the other.
 */
export function agreeBeforeCoordinator(plane: DataPlane, context: CollectiveContext, request: CollectiveRequest): Observable<bigint> {
  return agreeOnDataPlane(plane, context, { opcode: request.opcode, rootRank: request.rootRank }, 'coordinator');
}

/**
 * How the engine's outcome ends the collective: `result` when it is done (no outcome); else the
 * error the mesh exchange would give for the same failure, after telling every rank (the job is
 * over):
 * - mismatch: the peer's header is checked as a mesh agreement message, so a different operation
 *   names both ranks and both descriptors, a different sequence both numbers; a header that is
 *   neither (a corrupt byte) is a ProtocolError with its bytes;
 * - timed out: the missing ranks, by number;
 * - a peer that closed its link: `direct peer rank N left`, as the mesh says it;
 * - aborted: nothing; the session's failure, which woke the engine, ends the collective.
 */
export function settleNative<T>(outcome: NativeOutcome | undefined, context: CollectiveContext, collective: NativeCollective, result: () => T): Observable<T> {
  const { rank } = context;
  const { number, own } = collective;
  if (outcome === undefined || outcome.kind === 'done') return of(result());
  let error: Error;
  switch (outcome.kind) {
    case 'aborted':
      return NEVER;
    case 'mismatch':
      try {
        checkAgreement(outcome.header, outcome.peer, rank, own, number);
        error = new ProtocolError(`rank ${outcome.peer} sent a native data link header that is not collective ${number}'s: ${hex(outcome.header)}`);
      } catch (mismatch) {
        error = mismatch as Error;
      }
      break;
    case 'timed-out':
      error = new TimeoutError(`rank ${rank} collective ${number} (${opcodeName(own.opcode)}) on the native data plane; missing ranks [${outcome.missing.join(',')}]`);
      break;
    case 'peer-closed': {
      const text = `direct peer rank ${outcome.peer} left`;
      error = new RemoteAbortError(text, outcome.what === '' ? text : `${text} (${outcome.what})`);
      break;
    }
    default:
      error = new ProtocolError(`rank ${rank} native data link ${outcome.peer < 0 ? '' : `with rank ${outcome.peer} `}failed: ${outcome.what}`);
  }
  context.abort(failureText(error));
  return throwError(() => error);
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join(' ');
}
