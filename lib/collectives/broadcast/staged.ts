import type { Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, RootedRequest } from '../algorithm.js';
import { shaped, stagedPayload } from '../staged.js';

/** Broadcast through the coordinator: the root sends its tensor up, every rank gets it back. */
export function stagedBroadcast(_links: Links, request: RootedRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, root } = request;
  return stagedPayload(context, shaped(Opcode.Broadcast, view, { rootRank: root }), context.rank === root ? [view.bytes] : []);
}
