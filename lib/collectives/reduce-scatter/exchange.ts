import { mergeMap, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { exchangeOnMesh } from '../mesh-exchange.js';
import { expectBytes, reduceParts } from '../exchange-message.js';
import { shaped } from '../staged.js';

/** Reduce-scatter of small tensors over the mesh: every tensor goes with the agreement; each rank folds its own shard of each in rank order. */
export function exchangeReduceScatter(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, op } = request;
  const shardBytes = view.bytes.length / links.worldSize;
  const mine = (part: Uint8Array) => part.subarray(links.rank * shardBytes, (links.rank + 1) * shardBytes);
  return exchangeOnMesh(links, context, shaped(Opcode.ReduceScatter, view, { reduceOp: reduceOpCode(op) }), view.bytes).pipe(
    mergeMap((parts) =>
      reduceParts(context, parts.map((part, rank) => mine(expectBytes(part, view.bytes.length, rank))), view.dtype, op, request.output),
    ),
  );
}
