import { concat, defer, mergeMap, type Observable } from 'rxjs';
import { scheduleDivide } from '../../kernels/index.js';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { pairwisePieces, PairwiseSteps } from '../pairwise-steps.js';
import { agreeOnPeerData } from '../peer-agreement.js';
import type { Piece } from '../peer-data.js';
import { pieceWork } from '../piece-work.js';
import { fold } from '../ring-pass.js';
import { shaped } from '../staged.js';

/**
 * Reduce-scatter in one direct step (the first step of the pairwise all-reduce): every rank sends
 * each rank d shard d of its tensor at once, and folds the W-1 shards it receives into its own,
 * in rank order; avg then divides. The ring's bytes ((W-1)/W of the tensor each way) in one
 * dependent step instead of W-1: chosen, as the pairwise all-reduce, where every rank shares one
 * host (`pairwiseFits`).
 *
 * Emits the shard in `request.output`, else in fresh memory (this rank's shard of its tensor is
 * copied there piece by piece just before the first fold); the tensor is read only.
 */
export function pairwiseReduceScatter(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, op } = request;
  return agreeOnPeerData(links, context, shaped(Opcode.ReduceScatter, view, { reduceOp: reduceOpCode(op) }), 'pairwise').pipe(
    mergeMap((sequence) => {
      const { rank, worldSize } = links;
      const width = dtypeWidth(view.dtype);
      const shard = view.count / worldSize;
      const result = request.output ?? new Uint8Array(shard * width);
      const shardOf = (owner: number) => pairwisePieces(view.bytes, width, { start: owner * shard, count: shard }, context.pieceBytes);
      const work = pieceWork((start) => {
        const steps = new PairwiseSteps(links, start, sequence, view.elementType);
        const divide = (target: Piece) => (op === 'avg' ? start(scheduleDivide({ dtype: view.dtype, data: target.bytes, divisor: worldSize })) : undefined);
        steps.scatter(shardOf, pairwisePieces(result, width, { start: 0, count: shard }, context.pieceBytes), shardOf(rank), fold(view.dtype, op), divide);
        return () => steps.release();
      });
      return concat(work, defer(() => [result]));
    }),
  );
}
