import { concat, defer, mergeMap, type Observable } from 'rxjs';
import { scheduleDivide } from '../../kernels/index.js';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { agreeOnPeerData } from '../peer-agreement.js';
import { evenRanges, mod, type Piece, pieceTag, piecesOf } from '../peer-data.js';
import { pieceWork } from '../piece-work.js';
import { fold } from '../ring-pass.js';
import { shaped } from '../staged.js';

/** Pairwise all-reduce messages carry tags under this prefix ("PW"). */
export const PAIRWISE_TAG_PREFIX = 0x5057;

/** The tag's step: contributions travel to their segment's owner, then reduced segments from it. */
const SCATTER_STEP = 0;
const GATHER_STEP = 1;

/**
 * All-reduce in two direct steps (MPI's pairwise-exchange reduce-scatter, then a direct
 * all-gather): rank r owns segment r of the tensor. Every rank sends each owner that owner's
 * segment at once; the owner folds the W-1 contributions into its own (in rank order, so the
 * result does not depend on arrival order) and sends the reduced segment to every rank.
 *
 * The same bytes as the ring (each rank sends and receives 2(W-1)/W of the tensor) and the same
 * number of messages, but two dependent steps instead of 2(W-1). Where ranks share cores a ring
 * step waits for its one sender to be scheduled, and here every rank has work at once: 1 MiB at
 * 4 ranks on 2 cores ~10-15 % faster, 8 ranks 1.4-1.6x (bench/README.md). On one host the links
 * have no structure for a ring order to follow; across hosts the ring keeps traffic between
 * neighbours, so `selectAlgorithm` uses this only where every rank shares one host.
 *
 * - Segments move in pieces of about `context.pieceBytes`, each piece on its own: an owner folds
 *   and sends piece k while later pieces still arrive. Pieces are spread over the rails.
 * - Memory stays safe without copies: a segment sent in the first step is overwritten only by the
 *   owner's reduced piece, which the owner sends once it has received this rank's contribution;
 *   the segment this rank owns is never sent before it is reduced.
 * - avg divides at the owner, before the piece travels (every rank gets the same bits).
 *
 * Emits the result in `request.output` (in place when that is the input's own bytes), else in a
 * fresh buffer; the input is not modified unless it is the output. Into other memory, the own
 * segment is copied there piece by piece just before its first fold.
 */
export function pairwiseAllReduce(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, op } = request;
  return agreeOnPeerData(links, context, shaped(Opcode.AllReduce, view, { reduceOp: reduceOpCode(op) }), 'pairwise').pipe(
    mergeMap((sequence) => {
      const result = request.output ?? new Uint8Array(view.bytes.length);
      const { rank, worldSize } = links;
      const width = dtypeWidth(view.dtype);
      const ranges = evenRanges(0, view.count, worldSize);
      const segments = ranges.map((range) => piecesOf(result, width, range, context.pieceBytes));
      const inputs = result === view.bytes ? segments : ranges.map((range) => piecesOf(view.bytes, width, range, context.pieceBytes));
      // From rank + 1 on: every rank starts its sends with a different peer.
      const peers = Array.from({ length: worldSize - 1 }, (_, index) => mod(rank + 1 + index, worldSize));
      const foldOrder = [...peers].sort((a, b) => a - b);
      const railOf = (piece: Piece) => piece.index % links.rails;
      const tagOf = (step: number, piece: Piece) => pieceTag(PAIRWISE_TAG_PREFIX, sequence, 0, step, piece.index);
      const shapeOf = (piece: Piece) => ({ elementType: view.elementType, count: piece.elements });
      const accumulate = fold(view.dtype, op);
      const work = pieceWork((start) => {
        /** Received contributions not yet folded, given back to the links if the run ends first. */
        const held = new Set<Uint8Array>();
        for (const peer of peers) {
          for (const piece of inputs[peer]!) start(links.send(railOf(piece), peer, tagOf(SCATTER_STEP, piece), piece.bytes, shapeOf(piece)));
        }
        // This rank's segment: once a piece's contributions are all in, fold them, then send it to everyone.
        for (const target of segments[rank]!) {
          const contributions = new Array<Uint8Array>(worldSize);
          const reduced = () => {
            for (const peer of peers) start(links.send(railOf(target), peer, tagOf(GATHER_STEP, target), target.bytes, shapeOf(target)));
          };
          const foldFrom = (at: number): void => {
            if (at === foldOrder.length) {
              if (op === 'avg' && worldSize > 1) start(scheduleDivide({ dtype: view.dtype, data: target.bytes, divisor: worldSize }), reduced);
              else reduced();
              return;
            }
            const bytes = contributions[foldOrder[at]!]!;
            start(accumulate(target.bytes, bytes), () => {
              held.delete(bytes);
              links.release(bytes);
              foldFrom(at + 1);
            });
          };
          const own = inputs[rank]![target.index]!;
          let missing = peers.length;
          const arrived = () => {
            if (own !== target) target.bytes.set(own.bytes);
            foldFrom(0);
          };
          if (missing === 0) arrived();
          for (const peer of peers) {
            start(links.receive(railOf(target), peer, tagOf(SCATTER_STEP, target), shapeOf(target)), (bytes) => {
              held.add(bytes);
              contributions[peer] = bytes;
              if (--missing === 0) arrived();
            });
          }
        }
        // Every other segment comes reduced from its owner, straight into the result where the links can.
        for (const peer of peers) {
          for (const target of segments[peer]!) {
            start(links.receive(railOf(target), peer, tagOf(GATHER_STEP, target), shapeOf(target), target.bytes), (bytes) => {
              // Received in place, the payload is the caller's memory: never the pool's to take back.
              if (bytes === target.bytes) return;
              target.bytes.set(bytes);
              links.release(bytes);
            });
          }
        }
        return () => {
          for (const bytes of held) links.release(bytes);
        };
      });
      return concat(work, defer(() => [result]));
    }),
  );
}
