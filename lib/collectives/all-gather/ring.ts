import { concat, defer, merge, mergeMap, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, TensorRequest } from '../algorithm.js';
import { agreeOnPeerData } from '../peer-agreement.js';
import { evenRanges, piecesOf } from '../peer-data.js';
import { place, ringSchedule } from '../ring-pass.js';
import { shaped } from '../staged.js';

/**
 * All-gather as a ring (the all-gather half of the ring all-reduce): the result holds every rank's
 * tensor in rank order; this rank's goes into its slot, and in W-1 steps each position passes on
 * the slot it received last, so every rank sends and receives (W-1)/W of the result, pipelined in
 * pieces, instead of the coordinator sending all of it to every rank. Slots are split over
 * `ringChannels` concurrent rings.
 */
export function ringAllGather(links: Links, request: TensorRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view } = request;
  const { ringOrder, ringChannels } = context;
  const width = dtypeWidth(view.dtype);
  return agreeOnPeerData(links, context, shaped(Opcode.AllGather, view), `ring ${ringOrder.join(',')} channels ${ringChannels}`).pipe(
    mergeMap((sequence) => {
      const result = request.output ?? new Uint8Array(view.bytes.length * links.worldSize);
      result.set(view.bytes, links.rank * view.bytes.length);
      // Channel c carries part c of every rank's slot.
      const parts = evenRanges(0, view.count, ringChannels);
      const channels = parts.map((part, channel) => {
        const segments = Array.from({ length: links.worldSize }, (_, rank) => piecesOf(result, width, { start: rank * view.count + part.start, count: part.count }, context.pieceBytes));
        const wiring = { order: ringOrder, sequence, channel, elementType: view.elementType };
        return ringSchedule(links, wiring, segments, [{ holds: (position) => ringOrder[position]!, use: place, receivesInPlace: true }]);
      });
      return concat(merge(...channels), defer(() => [result]));
    }),
  );
}
