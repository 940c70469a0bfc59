import { defer, map, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, RootedRequest } from '../algorithm.js';
import { checkGatheredFits, shaped, stagedPayload } from '../staged.js';

/** Gather through the coordinator: the root gets every tensor in rank order; the others get null. */
export function stagedGather(_links: Links, request: RootedRequest, context: CollectiveContext): Observable<Uint8Array | null> {
  return defer(() => {
    checkGatheredFits(Opcode.Gather, request.view, context.worldSize);
    return stagedPayload(context, shaped(Opcode.Gather, request.view, { rootRank: request.root }), [request.view.bytes]);
  }).pipe(map((payload) => (context.rank === request.root ? payload : null)));
}
