import { concat, defer, mergeMap, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, RootedRequest } from '../algorithm.js';
import { pairwisePieces, PairwiseSteps } from '../pairwise-steps.js';
import { agreeOnPeerData } from '../peer-agreement.js';
import { pieceWork } from '../piece-work.js';
import { shaped } from '../staged.js';
import { broadcastResult } from './broadcast-result.js';

/**
 * Broadcast in one direct step (step 1 of the pairwise algorithms, from the root alone): the root
 * sends its tensor to every other rank at once and each receives it straight into its result.
 * The chain's bytes (W-1 copies of the tensor) with no rank forwarding: chosen where every rank
 * shares one host (`pairwiseFits`), where a rank in the middle of a chain has to be scheduled for
 * every piece it passes on. At 4 ranks on 2 cores, six alternating runs each: 1 MiB 3.1 -> 2.6 ms,
 * 64 MiB 97 -> 79 ms (bench/README.md).
 *
 * Emits the result in `request.output` (in place when that is the tensor itself), else in fresh
 * memory (the root's a copy of its tensor).
 */
export function pairwiseBroadcast(links: Links, request: RootedRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, root } = request;
  return agreeOnPeerData(links, context, shaped(Opcode.Broadcast, view, { rootRank: root }), 'pairwise').pipe(
    mergeMap((sequence) => {
      const result = broadcastResult(request, links.rank);
      const pieces = pairwisePieces(result, dtypeWidth(view.dtype), { start: 0, count: view.count }, context.pieceBytes);
      const work = pieceWork((start) => {
        const steps = new PairwiseSteps(links, start, sequence, view.elementType);
        if (links.rank === root) for (const piece of pieces) steps.sendToAll(piece);
        else steps.gather((peer) => (peer === root ? pieces : []));
      });
      return concat(work, defer(() => [result]));
    }),
  );
}
