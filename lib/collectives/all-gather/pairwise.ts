import { concat, defer, mergeMap, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, TensorRequest } from '../algorithm.js';
import { pairwisePieces, PairwiseSteps } from '../pairwise-steps.js';
import { agreeOnPeerData } from '../peer-agreement.js';
import { pieceWork } from '../piece-work.js';
import { shaped } from '../staged.js';

/**
 * All-gather in one direct step (the second step of the pairwise all-reduce): every rank sends its
 * tensor to every other rank at once and receives theirs straight into their slots of the result.
 * The ring's bytes ((W-1)/W of the result each way) in one dependent step instead of W-1: chosen,
 * as the pairwise all-reduce, where every rank shares one host (`pairwiseFits`).
 *
 * Emits the result in `request.output`, else in fresh memory; the tensor is read only (it may be
 * this rank's slot of the output).
 */
export function pairwiseAllGather(links: Links, request: TensorRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view } = request;
  return agreeOnPeerData(links, context, shaped(Opcode.AllGather, view), 'pairwise').pipe(
    mergeMap((sequence) => {
      const width = dtypeWidth(view.dtype);
      const result = request.output ?? new Uint8Array(view.bytes.length * links.worldSize);
      result.set(view.bytes, links.rank * view.bytes.length);
      const slot = (rank: number) => pairwisePieces(result, width, { start: rank * view.count, count: view.count }, context.pieceBytes);
      const work = pieceWork((start) => {
        const steps = new PairwiseSteps(links, start, sequence, view.elementType);
        for (const piece of pairwisePieces(view.bytes, width, { start: 0, count: view.count }, context.pieceBytes)) steps.sendToAll(piece);
        steps.gather(slot);
      });
      return concat(work, defer(() => [result]));
    }),
  );
}
