import { concat, defer, EMPTY, finalize, ignoreElements, merge, mergeMap, type Observable } from 'rxjs';
import { ConfigurationError } from '../../errors.js';
import { scheduleAccumulate, scheduleDivide } from '../../kernels/index.js';
import { Opcode } from '../../protocol/opcode.js';
import { reduceOpCode } from '../../protocol/reduce-op.js';
import { dtypeWidth } from '../../tensor.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ReductionRequest } from '../algorithm.js';
import { agreeOnPeerData, evenRanges, MAX_STEPS, pieceTag, piecesOf, ringPosition } from '../peer-data.js';
import { shaped } from '../staged.js';

/** Ring messages carry tags under this prefix ("RG"). */
export const RING_TAG_PREFIX = 0x5247;

const mod = (value: number, modulus: number) => ((value % modulus) + modulus) % modulus;

/**
 * All-reduce as a ring (reduce-scatter, then all-gather), the bandwidth-optimal schedule NCCL and
 * Gloo use for large tensors: each rank sends and receives 2(W-1)/W of the tensor, instead of
 * receiving all W contributions through the coordinator. The coordinator only agrees on it.
 *
 * - The ring is `context.ringOrder`; position p sends to the next position and receives from the
 *   previous one. The tensor is split into W segments (as even as possible, the first ones get
 *   the rest); step s of the reduce-scatter sends segment (p - s) and folds segment (p - s - 1)
 *   into the result with the accumulate kernel; after W-1 steps position p owns the reduced
 *   segment (p + 1), divided by W there for avg (before it travels, so every rank divides the same
 *   bits once). The all-gather then passes owned segments on.
 * - Each segment moves in pieces of about 1 MiB spread over the rails; all pieces of a step are in
 *   flight at once, so receiving, reducing (off the event loop) and sending overlap.
 * - With `ringChannels` > 1 the tensor is first split into that many parts, each going round its
 *   own ring concurrently (striped over the rails).
 * - A segment is never written while a send of it may still be queued: each is folded exactly
 *   once before it is sent, and overwritten in the all-gather only after its reduced value went
 *   round the ring, which needs the earlier send to have arrived.
 * - Every rank ends with identical bits; the fold order differs from the staged path's rank order,
 *   so floating-point sums may differ from it in the last bits (as across NCCL algorithms).
 *
 * Emits the result in a fresh buffer; the input is not modified.
 */
export function ringAllReduce(links: Links, request: ReductionRequest, context: CollectiveContext): Observable<Uint8Array> {
  const { view, op } = request;
  const { ringOrder, ringChannels } = context;
  const layout = `ring ${ringOrder.join(',')} channels ${ringChannels}`;
  return agreeOnPeerData(context, shaped(Opcode.AllReduce, view, { reduceOp: reduceOpCode(op) }), layout).pipe(
    mergeMap((sequence) => {
      const result = view.bytes.slice();
      const channels = evenRanges(0, view.count, ringChannels).map((range, channel) => ringChannel(links, request, context, { result, range, channel, sequence }));
      return concat(merge(...channels), defer(() => [result]));
    }),
  );
}

interface ChannelPlan {
  readonly result: Uint8Array;
  readonly range: { start: number; count: number };
  readonly channel: number;
  readonly sequence: bigint;
}

/** One ring over one part of the tensor; completes once that part is reduced everywhere. */
function ringChannel(links: Links, request: ReductionRequest, context: CollectiveContext, plan: ChannelPlan): Observable<never> {
  const { dtype, elementType } = request.view;
  const { op } = request;
  const size = context.ringOrder.length;
  const width = dtypeWidth(dtype);
  const { position, next, previous } = ringPosition(context.ringOrder, links.rank);
  const segments = evenRanges(plan.range.start, plan.range.count, size).map((range) => piecesOf(plan.result, width, range, context.pieceBytes));
  if (2 * (size - 1) > MAX_STEPS) throw new ConfigurationError(`a ring of ${size} ranks needs more than the ${MAX_STEPS} steps its tags can number`);
  const railOf = (piece: number) => (plan.channel + piece) % links.rails;
  const tagOf = (step: number, piece: number) => pieceTag(RING_TAG_PREFIX, plan.sequence, plan.channel, step, piece);

  const sendSegment = (segment: number, step: number) =>
    concat(...segments[segment]!.map((piece) => links.send(railOf(piece.index), next, tagOf(step, piece.index), piece.bytes, { elementType, count: piece.elements })));
  const receiveSegment = (segment: number, step: number, use: (target: Uint8Array, received: Uint8Array) => Observable<unknown>) =>
    merge(
      ...segments[segment]!.map((piece) =>
        links
          .receive(railOf(piece.index), previous, tagOf(step, piece.index), { elementType, count: piece.elements })
          .pipe(mergeMap((received) => use(piece.bytes, received).pipe(finalize(() => links.release(received))))),
      ),
    );
  const step = (send: Observable<unknown>, receive: Observable<unknown>) => merge(send, receive).pipe(ignoreElements());

  const accumulate = (accumulator: Uint8Array, source: Uint8Array) => scheduleAccumulate({ dtype, op, accumulator, source });
  const place = (target: Uint8Array, received: Uint8Array) =>
    defer(() => {
      target.set(received);
      return EMPTY;
    });
  const owned = segments[mod(position + 1, size)]!;
  const divide = defer(() => (op === 'avg' ? merge(...owned.map((piece) => scheduleDivide({ dtype, data: piece.bytes, divisor: size }))) : EMPTY));

  const reduceScatter = Array.from({ length: size - 1 }, (_, s) => step(sendSegment(mod(position - s, size), s), receiveSegment(mod(position - s - 1, size), s, accumulate)));
  const allGather = Array.from({ length: size - 1 }, (_, s) =>
    step(sendSegment(mod(position - s + 1, size), size - 1 + s), receiveSegment(mod(position - s, size), size - 1 + s, place)),
  );
  return concat(...reduceScatter, divide, ...allGather).pipe(ignoreElements());
}
