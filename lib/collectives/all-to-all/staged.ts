import type { Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, TensorRequest } from '../algorithm.js';
import { shaped, stagedPayload } from '../staged.js';

/** All-to-all through the coordinator: shard d of every rank goes to rank d, in rank order. */
export function stagedAllToAll(_links: Links, request: TensorRequest, context: CollectiveContext): Observable<Uint8Array> {
  return stagedPayload(context, shaped(Opcode.AllToAll, request.view), [request.view.bytes]);
}
