import { firstValueFrom } from 'rxjs';
import { scheduleAccumulate, scheduleDivide } from '../kernels/index.js';
import type { DType } from '../protocol/element-type.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import { dtypeWidth } from '../tensor.js';

/** What the ring needs from the direct peer mesh: tagged messages to and from a neighbour. */
export interface RingLinks {
  readonly rank: number;
  readonly worldSize: number;
  readonly rails: number;
  send(rail: number, destination: number, tag: bigint, bytes: Uint8Array, count: number): Promise<void>;
  receive(rail: number, source: number, tag: bigint, count: number): Promise<Uint8Array>;
  /** Hands back a received message's bytes once the ring is done with them (memory reuse). */
  release?(bytes: Uint8Array): void;
}

export interface RingAllReduceRequest {
  readonly dtype: DType;
  readonly op: ReduceOp;
  /** This rank's contribution; not modified. */
  readonly data: Uint8Array;
  /** The collective sequence the coordinator agreed this all-reduce as: it keys the ring's tags. */
  readonly sequence: bigint;
  /** Largest message of the ring; segments are cut into pieces of this size so steps overlap. */
  readonly chunkBytes?: number;
}

/** Ring messages carry tags under this prefix ("RG"); user tags should stay clear of it. */
export const RING_TAG_PREFIX = 0x5247n << 48n;
const DEFAULT_CHUNK_BYTES = 1 << 20;

/** Element ranges of the `worldSize` segments, as even as possible (the first ones get the rest). */
function segments(count: number, worldSize: number): { start: number; count: number }[] {
  const base = Math.floor(count / worldSize);
  const extra = count % worldSize;
  let start = 0;
  return Array.from({ length: worldSize }, (_, index) => {
    const size = base + (index < extra ? 1 : 0);
    const segment = { start, count: size };
    start += size;
    return segment;
  });
}

const mod = (value: number, modulus: number) => ((value % modulus) + modulus) % modulus;

/**
 * All-reduce over the direct peer mesh as a ring (reduce-scatter, then all-gather), the
 * bandwidth-optimal schedule NCCL and Gloo use for large tensors: each rank sends and receives
 * 2(W-1)/W of the tensor, instead of receiving all W contributions through the coordinator.
 *
 * - Step s of the reduce-scatter sends segment (r - s) to rank r+1 and folds segment (r - s - 1)
 *   from rank r-1 into the result with the accumulate kernel; after W-1 steps rank r owns the
 *   reduced segment (r + 1), divided by W for avg. The all-gather then passes owned segments on.
 * - Each segment moves in pieces of `chunkBytes`, spread over the rails; all pieces of a step are
 *   in flight at once, so receiving, reducing (off the event loop) and sending overlap.
 * - A segment is never written while a send of it may still be queued: each is folded exactly
 *   once before it is sent, and overwritten in the all-gather only after its reduced value went
 *   round the ring, which needs the earlier send to have arrived.
 * - Every rank ends with identical bits. The fold order differs from the coordinator's rank order,
 *   so floating-point sums may differ from the staged path in the last bits (as across NCCL
 *   algorithms); integer results are exact.
 *
 * Returns the result in a fresh buffer.
 */
export async function ringAllReduce(links: RingLinks, request: RingAllReduceRequest): Promise<Uint8Array> {
  const { rank, worldSize, rails } = links;
  const { dtype, op } = request;
  const width = dtypeWidth(dtype);
  const result = request.data.slice();
  const count = result.length / width;
  const parts = segments(count, worldSize);
  const chunkElements = Math.max(1, Math.floor((request.chunkBytes ?? DEFAULT_CHUNK_BYTES) / width));
  const next = mod(rank + 1, worldSize);
  const previous = mod(rank - 1, worldSize);
  const tagOf = (step: number, chunk: number) =>
    RING_TAG_PREFIX | ((request.sequence & 0xff_ffffn) << 24n) | (BigInt(step) << 12n) | BigInt(chunk);
  const pieces = (segment: number) => {
    const { start, count: size } = parts[segment]!;
    return Array.from({ length: Math.ceil(size / chunkElements) }, (_, chunk) => {
      const first = start + chunk * chunkElements;
      const elements = Math.min(chunkElements, start + size - first);
      return { chunk, elements, bytes: result.subarray(first * width, (first + elements) * width) };
    });
  };
  const sendSegment = async (segment: number, step: number) => {
    for (const piece of pieces(segment)) await links.send(piece.chunk % rails, next, tagOf(step, piece.chunk), piece.bytes, piece.elements);
  };
  const receiveSegment = (segment: number, step: number, use: (target: Uint8Array, received: Uint8Array) => Promise<unknown> | void) =>
    Promise.all(
      pieces(segment).map(async (piece) => {
        const received = await links.receive(piece.chunk % rails, previous, tagOf(step, piece.chunk), piece.elements);
        await use(piece.bytes, received);
        links.release?.(received);
      }),
    );

  for (let step = 0; step < worldSize - 1; step++) {
    await Promise.all([
      sendSegment(mod(rank - step, worldSize), step),
      receiveSegment(mod(rank - step - 1, worldSize), step, (accumulator, source) =>
        firstValueFrom(scheduleAccumulate({ dtype, op, accumulator, source })),
      ),
    ]);
  }
  const owned = mod(rank + 1, worldSize);
  if (op === 'avg') {
    const { start, count: size } = parts[owned]!;
    await firstValueFrom(scheduleDivide({ dtype, data: result.subarray(start * width, (start + size) * width), divisor: worldSize }));
  }
  for (let step = 0; step < worldSize - 1; step++) {
    const phaseStep = worldSize - 1 + step;
    await Promise.all([
      sendSegment(mod(rank - step + 1, worldSize), phaseStep),
      receiveSegment(mod(rank - step, worldSize), phaseStep, (target, received) => target.set(received)),
    ]);
  }
  return result;
}
