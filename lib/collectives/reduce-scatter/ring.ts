import { concat, defer, EMPTY, ignoreElements, merge, mergeMap, type Observable } from 'rxjs';
import { scheduleDivide } from '../../kernels/index.js';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { agreeOnPeerData } from '../peer-agreement.js';
import { evenRanges, mod, type Piece, piecesOf, ringPosition } from '../peer-data.js';
import { OwnPieces, ringSchedule } from '../ring-pass.js';
import { shaped } from '../staged.js';

/**
 * Reduce-scatter as a ring (the reduce-scatter half of the ring all-reduce): shard d of every
 * rank's tensor is reduced at rank d. The pass is arranged so that position p ends holding the
 * shard of rank `order[p]` (at step t it sends shard `order[p - t - 1]`), so each rank sends and
 * receives (W-1)/W of its tensor instead of all of it going through the coordinator. avg divides
 * the result.
 *
 * Nothing is copied ahead: the shard a rank sends first goes straight from its tensor; every
 * received piece is folded into a copy of this rank's own piece made just before the fold
 * (`OwnPieces`), in scratch memory for the shards that travel on, and in the result itself
 * (`request.output`, else fresh memory) for this rank's own shard, which it receives last.
 */
export function ringReduceScatter(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, op } = request;
  const { ringOrder, ringChannels } = context;
  const size = links.worldSize;
  const width = dtypeWidth(view.dtype);
  const shard = view.count / size;
  const shardBytes = shard * width;
  return agreeOnPeerData(links, context, shaped(Opcode.ReduceScatter, view, { reduceOp: reduceOpCode(op) }), `ring ${ringOrder.join(',')} channels ${ringChannels}`).pipe(
    mergeMap((sequence) => {
      const result = request.output ?? new Uint8Array(shardBytes);
      // Alone, this rank's shard is its tensor (no step folds anything into it).
      if (size === 1) result.set(view.bytes);
      // Shards received and passed on (W - 2 of them) are folded in scratch, one after the other.
      const work = size > 2 ? context.scratch.take((size - 2) * shardBytes) : null;
      const sentFirst = ringPosition(ringOrder, links.rank).previous;
      const relayed = Array.from({ length: size }, (_, rank) => rank).filter((rank) => rank !== links.rank && rank !== sentFirst);
      /** Where shard `rank`'s pieces live at this rank, and where its elements start there. */
      const home = (rank: number): { buffer: Uint8Array; first: number } =>
        rank === links.rank ? { buffer: result, first: 0 } : rank === sentFirst ? { buffer: view.bytes, first: rank * shard } : { buffer: work!, first: relayed.indexOf(rank) * shard };
      const own = new OwnPieces();
      const channels = evenRanges(0, shard, ringChannels).map((part, channel) => {
        const segments = Array.from({ length: size }, (_, rank): Piece[] => {
          const { buffer, first } = home(rank);
          const pieces = piecesOf(buffer, width, { start: first + part.start, count: part.count }, context.pieceBytes);
          if (buffer !== view.bytes) own.pair(pieces, piecesOf(view.bytes, width, { start: rank * shard + part.start, count: part.count }, context.pieceBytes));
          return pieces;
        });
        const wiring = { order: ringOrder, sequence, channel, elementType: view.elementType };
        return ringSchedule(links, wiring, segments, [{ holds: (position) => ringOrder[mod(position - 1, size)]!, use: own.foldOnto(view.dtype, op) }]);
      });
      const divide = defer(() => (op === 'avg' ? scheduleDivide({ dtype: view.dtype, data: result, divisor: size }) : EMPTY));
      return concat(
        merge(...channels),
        divide.pipe(ignoreElements()),
        defer(() => {
          if (work !== null) context.scratch.give(work);
          return [result];
        }),
      );
    }),
  );
}
