import { map, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, TensorRequest } from '../algorithm.js';
import { exchangeOnMesh } from '../mesh-exchange.js';
import { expectBytes, joined } from '../exchange-message.js';
import { shaped } from '../staged.js';

/** All-gather of small tensors over the mesh: the agreement round carries every tensor; concatenated in rank order. */
export function exchangeAllGather(links: Links, request: TensorRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view } = request;
  return exchangeOnMesh(links, context, shaped(Opcode.AllGather, view), view.bytes).pipe(
    map((parts) => joined(parts.map((part, rank) => expectBytes(part, view.bytes.length, rank)), request.output)),
  );
}
