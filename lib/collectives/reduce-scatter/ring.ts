import { concat, defer, EMPTY, ignoreElements, merge, mergeMap, type Observable } from 'rxjs';
import { scheduleDivide } from '../../kernels/index.js';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { agreeOnPeerData } from '../peer-agreement.js';
import { evenRanges, mod, piecesOf } from '../peer-data.js';
import { fold, ringSchedule } from '../ring-pass.js';
import { shaped } from '../staged.js';

/**
 * Reduce-scatter as a ring (the reduce-scatter half of the ring all-reduce): shard d of every
 * rank's tensor is reduced at rank d. The pass is arranged so that position p ends holding the
 * shard of rank `order[p]` (at step t it sends shard `order[p - t - 1]`), so each rank sends and
 * receives (W-1)/W of its tensor instead of all of it going through the coordinator. The folding
 * happens in scratch memory; the result is a fresh copy of this rank's shard. avg divides it.
 */
export function ringReduceScatter(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, op } = request;
  const { ringOrder, ringChannels } = context;
  const size = links.worldSize;
  const width = dtypeWidth(view.dtype);
  const shard = view.count / size;
  return agreeOnPeerData(links, context, shaped(Opcode.ReduceScatter, view, { reduceOp: reduceOpCode(op) }), `ring ${ringOrder.join(',')} channels ${ringChannels}`).pipe(
    mergeMap((sequence) => {
      const work = context.scratch.take(view.bytes.length);
      work.set(view.bytes);
      const own = work.subarray(links.rank * shard * width, (links.rank + 1) * shard * width);
      const channels = evenRanges(0, shard, ringChannels).map((part, channel) => {
        const segments = Array.from({ length: size }, (_, rank) => piecesOf(work, width, { start: rank * shard + part.start, count: part.count }, context.pieceBytes));
        const wiring = { order: ringOrder, sequence, channel, elementType: view.elementType };
        return ringSchedule(links, wiring, segments, [{ holds: (position) => ringOrder[mod(position - 1, size)]!, use: fold(view.dtype, op) }]);
      });
      const divide = defer(() => (op === 'avg' ? scheduleDivide({ dtype: view.dtype, data: own, divisor: size }) : EMPTY));
      return concat(
        merge(...channels),
        divide.pipe(ignoreElements()),
        defer(() => {
          const result = request.output ?? new Uint8Array(own.length);
          result.set(own);
          context.scratch.give(work);
          return [result];
        }),
      );
    }),
  );
}
