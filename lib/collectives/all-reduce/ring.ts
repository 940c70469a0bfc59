import { concat, defer, merge, mergeMap, type Observable } from 'rxjs';
import { scheduleDivide } from '../../kernels/index.js';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { agreeOnPeerData } from '../peer-agreement.js';
import { evenRanges, mod, type Piece, piecesOf, ringPosition } from '../peer-data.js';
import { fold, OwnPieces, place, ringSchedule } from '../ring-pass.js';
import { shaped } from '../staged.js';

/**
 * All-reduce as a ring (reduce-scatter, then all-gather), the bandwidth-optimal schedule NCCL and
 * Gloo use for large tensors: each rank sends and receives 2(W-1)/W of the tensor, instead of
 * receiving all W contributions through the coordinator. The coordinator only agrees on it.
 *
 * - The ring is `context.ringOrder`. The tensor is split into W segments (as even as possible, the
 *   first ones get the rest), numbered by ring position. The reduce-scatter pass (`ringSchedule`)
 *   folds each received piece into this rank's copy with the accumulate kernel; after it position
 *   p owns the reduced segment (p + 1), divided by W there for avg (before it travels, so every
 *   rank divides the same bits once). The all-gather pass then passes owned segments on.
 * - Each segment moves in pieces of about 1 MiB spread over the rails, each piece in its own
 *   pipeline through both passes, so receiving, reducing and sending overlap across steps.
 * - With `ringChannels` > 1 the tensor is first split into that many parts, each going round its
 *   own ring concurrently (striped over the rails).
 * - A segment is never written while a send of it may still be queued: each is folded exactly
 *   once before it is sent, and overwritten in the all-gather only after its reduced value went
 *   round the ring, which needs the earlier send to have arrived.
 * - Every rank ends with identical bits; the fold order differs from the staged path's rank order,
 *   so floating-point sums may differ from it in the last bits (as across NCCL algorithms).
 *
 * Emits the result in `request.output` (in place when that is the input's own bytes), else in a
 * fresh buffer; the input is not modified unless it is the output. Into other memory than the
 * input, nothing is copied ahead: the segment a rank sends first goes straight from the input,
 * and each received piece is folded into a copy of this rank's own piece made just before the
 * fold (`OwnPieces`); the all-gather then writes every other segment.
 */
export function ringAllReduce(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, op } = request;
  const { ringOrder, ringChannels } = context;
  const size = ringOrder.length;
  const width = dtypeWidth(view.dtype);
  const layout = `ring ${ringOrder.join(',')} channels ${ringChannels}`;
  return agreeOnPeerData(links, context, shaped(Opcode.AllReduce, view, { reduceOp: reduceOpCode(op) }), layout).pipe(
    mergeMap((sequence) => {
      const result = request.output ?? new Uint8Array(view.bytes.length);
      const inPlace = result === view.bytes;
      // Alone, the result is the tensor (no step writes it).
      if (size === 1 && !inPlace) result.set(view.bytes);
      const { position } = ringPosition(ringOrder, links.rank);
      const own = new OwnPieces();
      const channels = evenRanges(0, view.count, ringChannels).map((range, channel) => {
        const wiring = { order: ringOrder, sequence, channel, elementType: view.elementType };
        const ranges = evenRanges(range.start, range.count, size);
        const segments = ranges.map((segment) => piecesOf(result, width, segment, context.pieceBytes));
        const divide = (piece: Piece) => scheduleDivide({ dtype: view.dtype, data: piece.bytes, divisor: size });
        const then = op === 'avg' ? { then: divide } : {};
        const gather = { holds: (at: number) => mod(at + 1, size), use: place, receivesInPlace: true };
        if (inPlace) return ringSchedule(links, wiring, segments, [{ holds: (at) => at, use: fold(view.dtype, op), ...then }, gather]);
        // Into other memory: the segment sent first goes from the tensor, the others are folded
        // into copies of this rank's pieces made as they are folded (no copy of the tensor first).
        const inputs = ranges.map((segment) => piecesOf(view.bytes, width, segment, context.pieceBytes));
        segments.forEach((pieces, id) => own.pair(pieces, inputs[id]!));
        const sendsFrom = segments.map((pieces, id) => (id === position ? inputs[id]! : pieces));
        return ringSchedule(links, wiring, segments, [{ holds: (at) => at, use: own.foldOnto(view.dtype, op), sendsFrom, ...then }, gather]);
      });
      return concat(merge(...channels), defer(() => [result]));
    }),
  );
}
