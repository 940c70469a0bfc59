import type { Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { reduceOnPlane } from '../native-collective.js';

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
  return reduceOnPlane(links, request, context, Opcode.ReduceScatter, request.view.bytes.length / links.worldSize, { pairwise: true, scatter: true });
}
