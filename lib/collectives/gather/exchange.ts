import { map, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, RootedRequest } from '../algorithm.js';
import { exchangeOnMesh } from '../mesh-exchange.js';
import { expectBytes, joined } from '../exchange-message.js';
import { shaped } from '../staged.js';

/** Gather of small tensors over the mesh: the agreement round carries every tensor; the root concatenates them in rank order. */
export function exchangeGather(links: Links, request: RootedRequest, context: CollectiveContext): Observable<Uint8Array | null> {
  const { view, root } = request;
  return exchangeOnMesh(links, context, shaped(Opcode.Gather, view, { rootRank: root }), view.bytes).pipe(
    map((parts) => (links.rank === root ? joined(parts.map((part, rank) => expectBytes(part, view.bytes.length, rank)), request.output) : null)),
  );
}
