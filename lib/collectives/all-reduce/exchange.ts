import { mergeMap, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { exchangeOnMesh } from '../mesh-exchange.js';
import { expectBytes, reduceParts } from '../exchange-message.js';
import { shaped } from '../staged.js';

/**
 * All-reduce of a small tensor over the mesh: every rank sends its tensor to every rank in one
 * round (with the agreement), and each folds the W tensors in rank order, so every rank gets the
 * staged path's exact bits without a coordinator hop.
 */
export function exchangeAllReduce(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, op } = request;
  return exchangeOnMesh(links, context, shaped(Opcode.AllReduce, view, { reduceOp: reduceOpCode(op), tag: request.layout }), view.bytes).pipe(
    mergeMap((parts) =>
      reduceParts(
        context,
        parts.map((part, rank) => expectBytes(part, view.bytes.length, rank)),
        view.dtype,
        op,
        request.output,
      ),
    ),
  );
}
