import { mergeMap, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { reduceResponse, shaped } from '../staged.js';

/** Reduce-scatter through the coordinator: it returns this rank's shard of every tensor, this rank folds them. */
export function stagedReduceScatter(_links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const fields = shaped(Opcode.ReduceScatter, request.view, { reduceOp: reduceOpCode(request.op) });
  return context.coordinate(fields, [request.view.bytes], true).pipe(mergeMap((response) => reduceResponse(context, request, response.payload)));
}
