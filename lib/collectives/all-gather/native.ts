import { defer, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, TensorRequest } from '../algorithm.js';
import { dataPlaneOf, nativeCollective, rankSlots, runOnPlane } from '../native-collective.js';
import { shaped } from '../staged.js';

/**
 * All-gather on the native data plane, in one exchange: every rank sends its tensor to every other
 * at once and receives theirs straight into their slots of the result (the ring's bytes, in one
 * dependent step).
 *
 * Emits the result in `request.output`, else in fresh memory; the tensor is read only (it may be
 * this rank's slot of the output).
 */
export function nativeAllGather(links: Links, request: TensorRequest, context: CollectiveContext): Observable<Uint8Array> {
  return defer(() => {
    const plane = dataPlaneOf(links);
    const { view } = request;
    const collective = nativeCollective(context, shaped(Opcode.AllGather, view));
    const result = request.output ?? new Uint8Array(view.bytes.length * links.worldSize);
    const slots = rankSlots(result, links.worldSize);
    slots[links.rank]!.set(view.bytes);
    const sends = new Array<Uint8Array>(links.worldSize).fill(view.bytes);
    return runOnPlane(context, collective, (call) => plane.exchange({ ...call, sends, receives: slots }), () => result);
  });
}
