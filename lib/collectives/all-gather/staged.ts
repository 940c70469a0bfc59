import { defer, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, TensorRequest } from '../algorithm.js';
import { checkGatheredFits, shaped, stagedPayload } from '../staged.js';

/** All-gather through the coordinator: every rank gets every tensor, in rank order. */
export function stagedAllGather(_links: Links, request: TensorRequest, context: CollectiveContext): Observable<Uint8Array> {
  return defer(() => {
    checkGatheredFits(Opcode.AllGather, request.view, context.worldSize);
    return stagedPayload(context, shaped(Opcode.AllGather, request.view), [request.view.bytes]);
  });
}
