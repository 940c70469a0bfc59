import { catchError, concat, defer, ignoreElements, merge, type Observable, tap, throwError, timeout } from 'rxjs';
import { failureText, ProtocolError, TimeoutError } from '../errors.js';
import { type OperationDescriptor, operationMismatch, sameOperation } from '../protocol/agreement.js';
import { ANY_RANK } from '../protocol/constants.js';
import { decodeDescriptor, DESCRIPTOR_BYTES, encodeDescriptor } from '../protocol/descriptor-codec.js';
import { ElementType } from '../protocol/element-type.js';
import { opcodeName } from '../protocol/opcode.js';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import type { Links } from '../transport/links/links.js';
import { MAX_TIMER_DELAY_MS } from '../transport/transport-kind.js';
import type { CollectiveContext } from './algorithm.js';
import { layoutHash, pieceTag } from './peer-data.js';

/** Data of a rank that sends none with the agreement (a barrier; a broadcast's non-roots). */
export const NO_DATA = new Uint8Array(0);

/** Mesh exchange messages carry tags under this prefix ("EX"). */
export const EXCHANGE_TAG_PREFIX = 0x4558;

/** The descriptor the coordinator's agreement would check for `request`. */
export function descriptorOf(request: CollectiveRequest, layout: string): OperationDescriptor {
  return {
    opcode: request.opcode,
    elementType: request.elementType ?? ElementType.None,
    rootRank: request.rootRank ?? ANY_RANK,
    elementCount: request.elementCount ?? 0,
    reduceOp: request.reduceOp ?? 0,
    layoutHash: layout === '' ? 0n : layoutHash(layout),
  };
}

/**
 * The one-round agreement of a collective that stays off the coordinator (tcp_peer): every rank
 * sends every other rank its descriptor followed by `data`, and checks each descriptor it receives
 * against its own, so a mismatch is named with both ranks and both descriptors, as the
 * coordinator's agreement would; ranks that do not answer within the session timeout are named
 * as missing. Either failure aborts the job on every rank. Emits every rank's data, by rank (this
 * rank's own `data` at its index; the others are views of the received messages).
 *
 * One round trip between any two ranks, no coordinator hop: the small-message path.
 */
export function exchangeOnMesh(
  links: Links,
  context: CollectiveContext,
  request: CollectiveRequest,
  data: Uint8Array,
  layout = '',
  sequence?: bigint,
): Observable<Uint8Array[]> {
  return defer(() => {
    const { rank, worldSize } = links;
    const number = sequence ?? context.nextMeshSequence();
    const own = descriptorOf(request, layout);
    const message = new Uint8Array(DESCRIPTOR_BYTES + data.length);
    encodeDescriptor(own, number, message);
    message.set(data, DESCRIPTOR_BYTES);
    const tag = pieceTag(EXCHANGE_TAG_PREFIX, number, 0, 0, 0);
    const peers = Array.from({ length: worldSize }, (_, peer) => peer).filter((peer) => peer !== rank);
    const parts = new Array<Uint8Array>(worldSize);
    parts[rank] = data;
    const check = (peer: number, received: Uint8Array) => {
      const theirs = decodeDescriptor(received);
      if (theirs.sequence !== number) {
        throw new ProtocolError(`rank ${peer} sent mesh collective ${theirs.sequence} where rank ${rank} is at ${number}`);
      }
      if (!sameOperation(own, theirs.descriptor)) {
        const [first, second] = peer < rank ? [[peer, theirs.descriptor], [rank, own]] as const : [[rank, own], [peer, theirs.descriptor]] as const;
        throw operationMismatch(number, first[0], first[1], second[0], second[1]);
      }
      parts[peer] = received.subarray(DESCRIPTOR_BYTES);
    };
    const missing = () => peers.filter((peer) => parts[peer] === undefined);
    const shape = { elementType: ElementType.U8, count: message.length };
    return concat(
      merge(
        ...peers.map((peer) => links.send(0, peer, tag, message, shape)),
        ...peers.map((peer) => links.receive(0, peer, tag, { elementType: ElementType.U8, count: null }).pipe(tap((received) => check(peer, received)))),
      ).pipe(
        ignoreElements(),
        timeout({
          first: Math.min(context.timeoutMs(), MAX_TIMER_DELAY_MS),
          scheduler: context.scheduler,
          with: () =>
            throwError(
              () => new TimeoutError(`rank ${rank} collective ${number} (${opcodeName(own.opcode)}) on the direct peer mesh; missing ranks [${missing().join(',')}]`),
            ),
        }),
        catchError((error: unknown) => {
          // Only this rank has seen it: tell the others (errors of the links abort by themselves).
          if (error instanceof TimeoutError || error instanceof ProtocolError) context.abort(failureText(error));
          return throwError(() => error);
        }),
      ),
      defer(() => [parts]),
    );
  });
}

/** The parts one after the other in one fresh buffer (small messages: one copy is cheap). */
export function joined(parts: readonly Uint8Array[]): Uint8Array {
  const result = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    result.set(part, offset);
    offset += part.length;
  }
  return result;
}

/** Checks that a peer's data has the size the agreed descriptor implies. */
export function expectBytes(part: Uint8Array, bytes: number, rank: number): Uint8Array {
  if (part.length !== bytes) throw new ProtocolError(`rank ${rank} sent ${part.length} bytes of collective data, its descriptor implies ${bytes}`);
  return part;
}
