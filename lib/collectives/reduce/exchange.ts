import { mergeMap, type Observable, of } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, RootedReductionRequest } from '../algorithm.js';
import { exchangeOnMesh } from '../mesh-exchange.js';
import { expectBytes, reduceParts } from '../exchange-message.js';
import { shaped } from '../staged.js';

/** Reduce of a small tensor over the mesh: every rank sends its tensor with the agreement, the root folds them in rank order. */
export function exchangeReduce(links: Links, request: RootedReductionRequest, context: CollectiveContext): Observable<Uint8Array | null> {
  const { view, op, root } = request;
  const isRoot = links.rank === root;
  // Only the root needs the data, but every rank's goes with the agreement: small, and one round.
  return exchangeOnMesh(links, context, shaped(Opcode.Reduce, view, { reduceOp: reduceOpCode(op), rootRank: root }), view.bytes).pipe(
    mergeMap((parts) =>
      isRoot
        ? reduceParts(context, parts.map((part, rank) => expectBytes(part, view.bytes.length, rank)), view.dtype, op)
        : of(null),
    ),
  );
}
