import { concat, defer, mergeMap, type Observable } from 'rxjs';
import { scheduleDivide } from '../../kernels/index.js';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { agreeOnPeerData } from '../peer-agreement.js';
import { evenRanges, type Piece } from '../peer-data.js';
import { pairwisePieces, PairwiseSteps } from '../pairwise-steps.js';
import { pieceWork } from '../piece-work.js';
import { fold } from '../ring-pass.js';
import { shaped } from '../staged.js';

/**
 * All-reduce in two direct steps (MPI's pairwise-exchange reduce-scatter, then a direct
 * all-gather): rank r owns segment r of the tensor. Every rank sends each owner that owner's
 * segment at once; the owner folds the W-1 contributions into its own (in rank order, so the
 * result does not depend on arrival order) and sends the reduced segment to every rank.
 *
 * The same bytes as the ring (each rank sends and receives 2(W-1)/W of the tensor) and the same
 * number of messages, but two dependent steps instead of 2(W-1). Where ranks share cores a ring
 * step waits for its one sender to be scheduled, and here every rank has work at once: 1 MiB at
 * 4 ranks on 2 cores 17-25 % faster, 8 ranks 1.4-1.6x (bench/README.md). On one host the links
 * have no structure for a ring order to follow; across hosts the ring keeps traffic between
 * neighbours, so `selectAlgorithm` uses this only where every rank shares one host.
 *
 * - Segments move in pieces of about twice `context.pieceBytes` (`pairwisePieces`), each piece on
 *   its own: an owner folds and sends piece k while later pieces still arrive. Pieces are spread
 *   over the rails. The steps are `PairwiseSteps`, shared with the other pairwise algorithms.
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
      const segments = ranges.map((range) => pairwisePieces(result, width, range, context.pieceBytes));
      const inputs = result === view.bytes ? segments : ranges.map((range) => pairwisePieces(view.bytes, width, range, context.pieceBytes));
      const work = pieceWork((start) => {
        const steps = new PairwiseSteps(links, start, sequence, view.elementType);
        const divide = (target: Piece) => scheduleDivide({ dtype: view.dtype, data: target.bytes, divisor: worldSize });
        const reduced = (target: Piece) => (op === 'avg' ? start(divide(target), () => steps.sendToAll(target)) : steps.sendToAll(target));
        steps.scatter((peer) => inputs[peer]!, segments[rank]!, inputs[rank]!, fold(view.dtype, op), reduced);
        steps.gather((peer) => segments[peer]!);
        return () => steps.release();
      });
      return concat(work, defer(() => [result]));
    }),
  );
}
