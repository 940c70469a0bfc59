import { defer, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { dataPlaneOf, nativeCollective, runOnPlane } from '../native-collective.js';
import { shaped } from '../staged.js';

/**
 * Reduce-scatter on the native data plane: the first step of its pairwise all-reduce alone. Every
 * rank sends each rank d shard d of its tensor at once; each reduces the W shards of its own in
 * rank order as they arrive (avg divides in the same pass), a MiB or more at a time. Every
 * message carries the header, so every pair of ranks compares them.
 *
 * Emits the shard in `request.output` (which may be this rank's shard of the tensor), else in
 * fresh memory; the tensor is read only.
 */
export function nativeReduceScatter(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  return defer(() => {
    const plane = dataPlaneOf(links);
    const { view, op } = request;
    const collective = nativeCollective(context, shaped(Opcode.ReduceScatter, view, { reduceOp: reduceOpCode(op) }));
    const output = request.output ?? new Uint8Array(view.bytes.length / links.worldSize);
    const data = { pairwise: true, scatter: true, elementType: view.elementType, reduceOp: reduceOpCode(op), input: view.bytes, output, count: view.count };
    return runOnPlane(context, collective, (call) => plane.allReduce({ ...data, ...call }), () => output);
  });
}
