import { defer, NEVER, Observable, of, throwError } from 'rxjs';
import { failureText, ProtocolError, RemoteAbortError, TimeoutError } from '../../errors.js';
import type { OperationDescriptor } from '../../protocol/agreement.js';
import type { ElementType } from '../../protocol/element-type.js';
import { opcodeName } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import type { CollectiveRequest } from '../../transport/collective-channel.js';
import { type DataPlane, encodeLinkHeader, linkSequence, type NativeOutcome, type PlaneCall } from '../../transport/data-plane.js';
import { PEER_LEFT_GRACE_MS } from '../../transport/peer-left-error.js';
import { DESCRIPTOR_BYTES } from '../../protocol/descriptor-codec.js';
import type { NativePlane, PlaneMemory } from './native-plane.js';
import type { PlaneProgram } from './schedule-cache.js';
import type { CollectiveContext } from '../algorithm.js';
import { checkAgreement, descriptorOf } from '../descriptor.js';
import { withHeaderExchange } from './header-exchange.js';
import { headerLabel, labelledHeader, messageLabel, messageText } from './message-label.js';
import type { Dependency, Producers, Schedule, Span } from './schedule.js';

/** The addon's engine as a `NativePlane`: each schedule shape compiled once, with its headers on the ring of successors. */
export function addonPlane(plane: DataPlane, rank: number, worldSize: number): NativePlane {
  return {
    run: (key, schedule, elementType, memory, call) => {
      const program = plane.program(key, () => encodeProgram(withHeaderExchange(schedule, worldSize, rank), elementType));
      return plane.run(program, memory.input, memory.output, call);
    },
    end: () => plane.end(),
    close: () => plane.close(),
    forget: () => plane.forgetPrograms(),
    singleCopyPeers: () => plane.singleCopyPeers(),
    sharedMemoryPeers: () => plane.sharedMemoryPeers(),
    waitingFor: () => plane.waitingFor(),
  };
}

const MEMORY_CODES = { input: 0, output: 1, scratch: 2 } as const;

/**
 * A schedule as the engine decodes it (native/schedule_program.cc), numbers in a Float64Array:
 * element type, scratch bytes; the sends (peer, rail, label, memory, offset, bytes, gate kind, gate
 * index), then the receives (peer, rail, label, memory, offset, bytes), then the folds (memory, offset, bytes, op,
 * divisor, source count, (memory, offset) per source, gate count, (kind, index) per gate), each
 * list after its length. Memories: 0 input, 1 output, 2 scratch; gate kinds: 0 none, 1 a receive,
 * 2 a fold, 3 a send; a send of several producers' bytes (`Producers`) has gate kind 4 and, in
 * place of the index, its skip, its part count and (kind, index) per part. Internal to a process:
 * nothing of it goes on the wire.
 */
export function encodeProgram(schedule: Schedule, elementType: ElementType): Float64Array {
  const numbers: number[] = [elementType, schedule.scratchBytes];
  const spanOf = (of: Span, sized = true) => (sized ? numbers.push(MEMORY_CODES[of.memory], of.offset, of.bytes) : numbers.push(MEMORY_CODES[of.memory], of.offset));
  const gate = (dependency: Dependency | Producers | null) => {
    if (dependency === null) numbers.push(0, 0);
    else if ('parts' in dependency) {
      numbers.push(4, dependency.skip, dependency.parts.length);
      for (const part of dependency.parts) gate(part);
    }
    else if ('receive' in dependency) numbers.push(1, dependency.receive);
    else if ('fold' in dependency) numbers.push(2, dependency.fold);
    else numbers.push(3, dependency.send);
  };
  numbers.push(schedule.sends.length);
  for (const send of schedule.sends) {
    numbers.push(send.peer, send.rail ?? 0, messageLabel(send));
    spanOf(send.span);
    gate(send.after);
  }
  numbers.push(schedule.receives.length);
  for (const receive of schedule.receives) {
    numbers.push(receive.peer, receive.rail ?? 0, messageLabel(receive));
    spanOf(receive.span);
  }
  numbers.push(schedule.folds.length);
  for (const fold of schedule.folds) {
    spanOf(fold.target);
    numbers.push(reduceOpCode(fold.op), fold.divisor, fold.sources.length);
    for (const source of fold.sources) spanOf(source, false);
    numbers.push(fold.after.length);
    for (const dependency of fold.after) gate(dependency);
  }
  return Float64Array.from(numbers);
}

/**
 * A collective on the native data plane: its mesh number (the session's count of mesh-agreed
 * collectives, shared with the header exchanges before collectives agreed at the coordinator) and descriptor, which every one of its messages carries
 * as its header (docs/protocol.md 9.9).
 */
export interface NativeCollective {
  readonly number: bigint;
  readonly own: OperationDescriptor;
}

/** Takes the next mesh collective number for `request` with `layout`. */
export function nativeCollective(context: CollectiveContext, request: CollectiveRequest, layout: string): NativeCollective {
  return { number: context.nextMeshSequence(), own: descriptorOf(request, layout) };
}

/**
 * Runs `schedule` on the plane for `collective` and settles how it ended (`settleNative`): emits
 * `result()` once it is done.
 */
export function runOnPlane<T>(plane: NativePlane, context: CollectiveContext, collective: NativeCollective, program: PlaneProgram, memory: PlaneMemory, result: () => T): Observable<T> {
  const call: PlaneCall = { descriptor: collective.own, sequence: collective.number, timeoutMs: context.timeoutMs() };
  // Hand-written rather than mergeMap + of: every small collective passes here, and a done one
  // (nearly all) needs no inner Observable.
  return new Observable<T>((subscriber) =>
    plane.run(program.key, program.schedule, program.elementType, memory, call).subscribe({
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

/** The program of a collective agreed at the coordinator: its headers alone. */
const HEADERS: PlaneProgram = {
  key: 'headers',
  schedule: () => ({ algorithm: 'headers', layout: '', tagPrefix: 0, pieceScale: 1, scratchBytes: 0, sends: [], receives: [], folds: [] }),
  elementType: 0,
};
const NO_MEMORY: PlaneMemory = { input: new Uint8Array(0), output: new Uint8Array(0) };

/**
 * What a collective agreed at the coordinator (staged, `session.exchange`, `setTimeout`) says on
 * the data links of a native session before it goes there: its opcode and root alone (layout
 * "coordinator"), since ranks of one such collective may legitimately differ in the rest (a
 * scatter's non-roots may not know the type) and the coordinator checks it all. A schedule of no
 * messages under the plane's agreement (`withHeaderExchange`): a header to the successor on the
 * ring, one from the predecessor; a rank in it and a rank in a collective of the plane are named
 * as a mismatch at once, rather than each timing out on the other. Emits the collective's mesh
 * number.
 */
export function agreeBeforeCoordinator(plane: NativePlane, context: CollectiveContext, request: CollectiveRequest): Observable<bigint> {
  return defer(() => {
    const collective = nativeCollective(context, { opcode: request.opcode, rootRank: request.rootRank }, 'coordinator');
    return runOnPlane(plane, context, collective, HEADERS, NO_MEMORY, () => collective.number);
  });
}

/**
 * How the engine's outcome ends the collective: `result` when it is done (no outcome); else the
 * error the JS plane's agreement gives for the same failure, after telling every rank (the job is
 * over):
 * - mismatch: the peer's header is checked as a mesh agreement message, so a different operation
 *   names both ranks and both descriptors, a different sequence both numbers; a header that is
 *   neither (a corrupt byte) is a ProtocolError with its bytes;
 * - timed out: the missing ranks, by number;
 * - a peer that closed its link: `direct peer rank N left`, as the mesh says it, unless the
 *   session fails with another reason within `PEER_LEFT_GRACE_MS`; in a fault-tolerant job the
 *   peer is lost instead (`context.peerLost`), and the session's RankLostError ends the collective;
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
      error = headerMismatch(outcome, rank, collective);
      break;
    case 'timed-out':
      error = new TimeoutError(`rank ${rank} collective ${number} (${opcodeName(own.opcode)}) on the native data plane; missing ranks [${outcome.missing.join(',')}]`);
      break;
    case 'peer-closed': {
      // A fault-tolerant job loses the peer and goes on: the session's failure (RankLostError) ends this.
      if (context.peerLost !== null) {
        context.peerLost(outcome.peer, `its native data link closed while rank ${rank} needed it${outcome.what === '' ? '' : ` (${outcome.what})`}`);
        return NEVER;
      }
      const text = `direct peer rank ${outcome.peer} left`;
      return blameAfterGrace(context, new RemoteAbortError(text, outcome.what === '' ? text : `${text} (${outcome.what})`));
    }
    default:
      error = new ProtocolError(`rank ${rank} native data link ${outcome.peer < 0 ? '' : `with rank ${outcome.peer} `}failed: ${outcome.what}`);
  }
  context.abort(failureText(error));
  return throwError(() => error);
}

/**
 * Why a peer's header on a data link is not the one this rank expected: another collective (the
 * agreement's texts: both ranks and descriptors, or both numbers); the same collective but another
 * of its messages (its label: both identities and the link); else a corrupt header, by its bytes.
 */
function headerMismatch(outcome: NativeOutcome, rank: number, collective: NativeCollective): Error {
  const { peer, header } = outcome;
  const sequence = linkSequence(collective.number);
  const label = headerLabel(header);
  const theirs = labelledHeader(header, 0);
  try {
    checkAgreement(theirs, peer, rank, collective.own, sequence);
  } catch (mismatch) {
    return mismatch as Error;
  }
  const ours = encodeLinkHeader({ descriptor: collective.own, sequence: collective.number }, new Uint8Array(DESCRIPTOR_BYTES));
  if (!theirs.every((byte, at) => byte === ours[at])) {
    return new ProtocolError(`rank ${peer} sent a native data link header that is not collective ${collective.number}'s: ${hex(header)}`);
  }
  const link = `its data link${outcome.rail === 0 ? '' : ` of rail ${outcome.rail}`} to rank ${rank}`;
  return new ProtocolError(
    `rank ${peer} sent collective ${collective.number} (${opcodeName(collective.own.opcode)}) ${messageText(label)} on ${link}, where rank ${rank} expects ${messageText(outcome.label)}`,
  );
}

/**
 * Fails with `error` (telling every rank) after `PEER_LEFT_GRACE_MS`, unless the session fails
 * first: an Abort that arrives meanwhile ends the collective with its own, truer reason.
 */
function blameAfterGrace<T>(context: CollectiveContext, error: Error): Observable<T> {
  return new Observable<T>((subscriber) => {
    const deadline = context.deadlines.add(PEER_LEFT_GRACE_MS, () => {
      context.abort(failureText(error));
      subscriber.error(error);
    });
    return () => context.deadlines.remove(deadline);
  });
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join(' ');
}

