import { concat, defer, EMPTY, ignoreElements, type Observable } from 'rxjs';
import { scheduleDivide } from '../../kernels/index.js';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { agreementMessage, ANY_BYTES, bytesShape, checkAgreement, descriptorOf, EXCHANGE_TAG_PREFIX, type ExchangeStep, expectBytes, NO_DATA, runExchange } from '../exchange-message.js';
import { evenRanges, type Piece, pieceTag, piecesOf } from '../peer-data.js';
import { fold } from '../ring-pass.js';
import { shaped } from '../staged.js';

/** Scatter-gather messages carry tags under this prefix ("SG"). */
export const SCATTER_GATHER_TAG_PREFIX = 0x5347;

/** Tag steps: a contribution to its segment's owner, then an owner's reduced segment to everyone. */
const CONTRIBUTION = 1;
const REDUCED = 2;

/**
 * All-reduce as a direct reduce-scatter then a direct all-gather (the shape of Rabenseifner's
 * algorithm, with every pair talking at once): segment r of the tensor belongs to rank r; every
 * rank sends each owner its part of that owner's segment, each owner folds the W parts in rank
 * order, and sends the reduced segment to every rank. Each rank moves the ring's 2(W-1)/W of the
 * tensor, in two steps instead of the ring's 2(W-1), and with no agreement round of its own. The
 * planner uses it where that wins (`SCATTER_GATHER_MAX_BYTES`): at 2 ranks it is the ring's two
 * steps without the ring's agreement round trip; with more ranks every pair sending at once costs
 * more than the ring's steps save, on the 2-core machine it was measured on.
 *
 * - No separate agreement round: the first message to each peer is this rank's agreement message
 *   (descriptor only, the pairwise exchange's tag), and every rank checks every other's, so a
 *   mismatch names both ranks and both descriptors; ranks that do not come are named as missing
 *   at the session timeout; either failure aborts the job (`runExchange`).
 * - Folding in rank order gives every rank the staged path's exact bits (the kernels fold left in
 *   rank order).
 * - Parts arrive in scratch memory; reduced segments land straight in the result (`into`). The
 *   input is read while its parts are sent and is not modified unless it is the output; then this
 *   rank's own part is set aside before its segment is overwritten.
 */
export function scatterGatherAllReduce(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, op } = request;
  return defer(() => {
    const { rank, worldSize } = links;
    const number = context.nextMeshSequence();
    const own = descriptorOf(shaped(Opcode.AllReduce, view, { reduceOp: reduceOpCode(op) }), 'scatter-gather');
    const width = dtypeWidth(view.dtype);
    const result = request.output ?? new Uint8Array(view.bytes.length);
    const inPlace = result === view.bytes;
    const peers = Array.from({ length: worldSize }, (_, peer) => peer).filter((peer) => peer !== rank);
    const segments = evenRanges(0, view.count, worldSize);
    const piecesIn = (buffer: Uint8Array, segment: number) => piecesOf(buffer, width, segments[segment]!, context.pieceBytes);
    const mine = piecesIn(result, rank);
    const shape = (piece: Piece) => ({ elementType: view.elementType, count: piece.elements });
    const tagOf = (step: number, piece: number) => pieceTag(SCATTER_GATHER_TAG_PREFIX, number, 0, step, piece);
    const agreementTag = pieceTag(EXCHANGE_TAG_PREFIX, number, 0, 0, 0);
    const agreement = agreementMessage(own, number, NO_DATA);
    // What each peer has delivered, to name the missing ones: its agreement and parts, then its reduced segment.
    const delivered = new Map<number, number>(peers.map((peer) => [peer, 0]));
    const deliveredFrom = (peer: number) => delivered.set(peer, delivered.get(peer)! + 1);
    let expected = (_peer: number) => 1 + mine.length;
    // parts[r][k]: rank r's part of piece k of this rank's segment. In place, this rank's own part
    // is its segment of the result, which the fold overwrites from rank 0's part on: set it aside.
    const ownParts = piecesIn(view.bytes, rank).map((piece) => (inPlace && rank !== 0 ? piece.bytes.slice() : piece.bytes));
    const parts: Uint8Array[][] = Array.from({ length: worldSize }, (_, peer) =>
      peer === rank ? ownParts : mine.map((piece) => context.scratch.take(piece.bytes.length)),
    );
    const contribute = (): ExchangeStep[] => [
      ...peers.map((peer) => ({ run: links.send(0, peer, agreementTag, agreement, bytesShape(agreement)) })),
      ...peers.map((peer) => ({
        run: links.receive(0, peer, agreementTag, ANY_BYTES),
        onValue: (received: Uint8Array) => {
          expectBytes(checkAgreement(received, peer, rank, own, number), 0, peer);
          deliveredFrom(peer);
        },
      })),
      ...peers.flatMap((peer) => piecesIn(view.bytes, peer).map((piece) => ({ run: links.send(0, peer, tagOf(CONTRIBUTION, piece.index), piece.bytes, shape(piece)) }))),
      ...peers.flatMap((peer) =>
        mine.map((piece) => ({
          run: links.receive(0, peer, tagOf(CONTRIBUTION, piece.index), shape(piece), parts[peer]![piece.index]!),
          onValue: (received: Uint8Array) => {
            keep(parts[peer]!, piece.index, received);
            deliveredFrom(peer);
          },
        })),
      ),
    ];
    // In rank order: the reduced piece starts as rank 0's part and folds in the others'.
    const reduce = (): ExchangeStep[] =>
      mine.map((piece) => ({
        run: concat(
          defer(() => {
            const first = parts[0]![piece.index]!;
            if (first !== piece.bytes) piece.bytes.set(first);
            return EMPTY;
          }),
          ...parts.slice(1).map((part) => defer(() => fold(view.dtype, op)(piece.bytes, part[piece.index]!))),
          defer(() => (op === 'avg' ? scheduleDivide({ dtype: view.dtype, data: piece.bytes, divisor: worldSize }) : EMPTY)),
        ).pipe(ignoreElements()),
      }));
    const share = (): ExchangeStep[] => {
      expected = (peer) => piecesIn(result, peer).length;
      for (const peer of peers) for (const part of parts[peer]!) context.scratch.give(part);
      for (const peer of peers) delivered.set(peer, 0);
      return [
        ...peers.flatMap((peer) => mine.map((piece) => ({ run: links.send(0, peer, tagOf(REDUCED, piece.index), piece.bytes, shape(piece)) }))),
        ...peers.flatMap((peer) =>
          piecesIn(result, peer).map((piece) => ({
            run: links.receive(0, peer, tagOf(REDUCED, piece.index), shape(piece), piece.bytes),
            onValue: (received: Uint8Array) => {
              if (received !== piece.bytes) piece.bytes.set(received);
              links.release(received);
              deliveredFrom(peer);
            },
          })),
        ),
      ];
    };
    const deadline = {
      number,
      opcode: Opcode.AllReduce,
      waitMs: context.timeoutMs(),
      missing: () => peers.filter((peer) => delivered.get(peer)! < expected(peer)),
    };
    return runExchange(context, deadline, [contribute, reduce, share], () => result);
  });
}

/** A part that did not land in its scratch buffer (it came before its receive was posted) is copied there. */
function keep(parts: Uint8Array[], index: number, received: Uint8Array): void {
  if (received !== parts[index]) parts[index]!.set(received);
}
