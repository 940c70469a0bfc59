import { map, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, RootedRequest } from '../algorithm.js';
import { exchangeOnMesh } from '../mesh-exchange.js';
import { expectBytes, NO_DATA } from '../exchange-message.js';
import { shaped } from '../staged.js';

/**
 * Broadcast of a small tensor over the mesh: the root's agreement message carries it, the others'
 * carry nothing. The root's part (a view of a received message, or the root's own tensor where it
 * did not travel back through the hub) is copied into `request.output`, else into fresh memory;
 * nothing is copied where the part already is the output.
 */
export function exchangeBroadcast(links: Links, request: RootedRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, root } = request;
  return exchangeOnMesh(links, context, shaped(Opcode.Broadcast, view, { rootRank: root }), links.rank === root ? view.bytes : NO_DATA).pipe(
    map((parts) => {
      const part = expectBytes(parts[root]!, view.bytes.length, root);
      if (request.output === undefined) return part.slice();
      if (part !== request.output) request.output.set(part);
      return request.output;
    }),
  );
}
