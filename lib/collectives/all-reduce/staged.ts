import { defer, mergeMap, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { checkGatheredFits, reduceResponse, shaped } from '../staged.js';

/** All-reduce through the coordinator: it returns every rank's tensor, this rank folds them. */
export function stagedAllReduce(_links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  return defer(() => {
    checkGatheredFits(Opcode.AllReduce, request.view, context.worldSize);
    return context.coordinate(shaped(Opcode.AllReduce, request.view, { reduceOp: reduceOpCode(request.op), tag: request.layout }), [request.view.bytes], true);
  }).pipe(mergeMap((response) => reduceResponse(context, request, response.payload)));
}
