import { defer, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, TensorRequest } from '../algorithm.js';
import { dataPlaneOf, nativeCollective, rankSlots, runOnPlane } from '../native-collective.js';
import { shaped } from '../staged.js';

/**
 * All-to-all on the native data plane, in one exchange: rank r's shard p (its tensor cut in W
 * equal shards) goes to rank p, which receives it straight into its shard r of the result.
 *
 * Emits the result in `request.output`, else in fresh memory.
 */
export function nativeAllToAll(links: Links, request: TensorRequest, context: CollectiveContext): Observable<Uint8Array> {
  return defer(() => {
    const plane = dataPlaneOf(links);
    const { view } = request;
    const collective = nativeCollective(context, shaped(Opcode.AllToAll, view));
    const result = request.output ?? new Uint8Array(view.bytes.length);
    const sends = rankSlots(view.bytes, links.worldSize);
    const receives = rankSlots(result, links.worldSize);
    receives[links.rank]!.set(sends[links.rank]!);
    return runOnPlane(context, collective, (call) => plane.exchange({ ...call, sends, receives }), () => result);
  });
}
