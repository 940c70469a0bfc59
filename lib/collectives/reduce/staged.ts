import { defer, mergeMap, type Observable, of } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, RootedReductionRequest } from '../algorithm.js';
import { checkGatheredFits, reduceResponse, shaped } from '../staged.js';

/** Reduce through the coordinator: the root gets every rank's tensor and folds them; the others get nothing. */
export function stagedReduce(_links: Links, request: RootedReductionRequest, context: CollectiveContext): Observable<Uint8Array | null> {
  return defer(() => {
    checkGatheredFits(Opcode.Reduce, request.view, context.worldSize);
    const fields = shaped(Opcode.Reduce, request.view, { reduceOp: reduceOpCode(request.op), rootRank: request.root });
    return context.coordinate(fields, [request.view.bytes], true);
  }).pipe(mergeMap((response) => (context.rank === request.root ? reduceResponse(context, request, response.payload) : of(null))));
}
