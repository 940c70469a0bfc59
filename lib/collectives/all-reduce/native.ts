import type { Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { reduceOnPlane } from '../native-collective.js';

/**
 * Tensors from this size go reduce-scatter + all-gather between every pair (each rank sends
 * 2(W-1)/W of its tensor); below it every rank sends all of it to every other (one step, the
 * latency of one message). 64 KiB: where the prototype's two ways crossed (bench/native-ceiling).
 */
export const NATIVE_PAIRWISE_MIN_BYTES = 64 * 1024;

/**
 * All-reduce on the native data plane (`links.dataPlane`): the addon's thread moves the data and
 * reduces it, with no event-loop turn between messages. Every message carries the collective's
 * header, which each receiver compares with its own before reading the payload: that is the
 * agreement, between every pair of ranks (`settleNative` names a mismatch, a timeout, a peer that
 * left). The W inputs are reduced in rank order, so every rank gets the same bits as the staged
 * path (avg divides in the same pass).
 *
 * Emits the result in `request.output` (in place when that is the input's own bytes), else in a
 * fresh buffer.
 */
export function nativeAllReduce(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const bytes = request.view.bytes.length;
  return reduceOnPlane(links, request, context, Opcode.AllReduce, bytes, { pairwise: bytes >= NATIVE_PAIRWISE_MIN_BYTES });
}
