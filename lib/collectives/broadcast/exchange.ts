import { map, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, RootedRequest } from '../algorithm.js';
import { exchangeOnMesh, expectBytes } from '../mesh-exchange.js';
import { shaped } from '../staged.js';

const EMPTY = new Uint8Array(0);

/** Broadcast of a small tensor over the mesh: the root's agreement message carries it, the others' carry nothing. */
export function exchangeBroadcast(links: Links, request: RootedRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, root } = request;
  return exchangeOnMesh(links, context, shaped(Opcode.Broadcast, view, { rootRank: root }), links.rank === root ? view.bytes : EMPTY).pipe(
    map((parts) => expectBytes(parts[root]!, view.bytes.length, root).slice()),
  );
}
