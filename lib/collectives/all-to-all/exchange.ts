import { map, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, TensorRequest } from '../algorithm.js';
import { exchangeOnMesh } from '../mesh-exchange.js';
import { expectBytes, joined } from '../exchange-message.js';
import { shaped } from '../staged.js';

/** All-to-all of small tensors over the mesh: every tensor goes with the agreement; each rank keeps its shard of each, in rank order. */
export function exchangeAllToAll(links: Links, request: TensorRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view } = request;
  const shardBytes = view.bytes.length / links.worldSize;
  const mine = (part: Uint8Array) => part.subarray(links.rank * shardBytes, (links.rank + 1) * shardBytes);
  return exchangeOnMesh(links, context, shaped(Opcode.AllToAll, view), view.bytes).pipe(
    map((parts) => joined(parts.map((part, rank) => mine(expectBytes(part, view.bytes.length, rank))), request.output)),
  );
}
