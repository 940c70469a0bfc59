import { defer, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, RootedRequest } from '../algorithm.js';
import { byRank, dataPlaneOf, nativeCollective, rankSlots, runOnPlane } from '../native-collective.js';
import { shaped } from '../staged.js';

/**
 * Gather on the native data plane, in one exchange: every rank sends its tensor to the root, which
 * receives each straight into its rank's slot of the result; every other message is header only.
 *
 * Emits the result at the root (`request.output`, else fresh memory), null elsewhere.
 */
export function nativeGather(links: Links, request: RootedRequest, context: CollectiveContext): Observable<Uint8Array | null> {
  return defer(() => {
    const plane = dataPlaneOf(links);
    const { view, root } = request;
    const collective = nativeCollective(context, shaped(Opcode.Gather, view, { rootRank: root }));
    if (links.rank !== root) {
      const sends = byRank(links.worldSize, root, view.bytes);
      return runOnPlane(context, collective, (call) => plane.exchange({ ...call, sends, receives: [] }), () => null);
    }
    const result = request.output ?? new Uint8Array(view.bytes.length * links.worldSize);
    const slots = rankSlots(result, links.worldSize);
    slots[root]!.set(view.bytes);
    return runOnPlane(context, collective, (call) => plane.exchange({ ...call, sends: [], receives: slots }), () => result);
  });
}
