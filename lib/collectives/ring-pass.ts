import { defer, EMPTY, type Observable } from 'rxjs';
import { ConfigurationError } from '../errors.js';
import { scheduleAccumulate } from '../kernels/index.js';
import type { DType, ElementType } from '../protocol/element-type.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import type { Links } from '../transport/links/links.js';
import { pieceWork } from './piece-work.js';
import { MAX_STEPS, mod, type Piece, PIECE_BYTES, pieceTag, ringPosition } from './peer-data.js';

/** Ring messages carry tags under this prefix ("RG"). */
export const RING_TAG_PREFIX = 0x5247;

/** Where this rank sits on one ring and how its messages are tagged and spread over the rails. */
export interface RingWiring {
  readonly order: readonly number[];
  readonly sequence: bigint;
  readonly channel: number;
  readonly elementType: ElementType;
}

/**
 * One pass round a ring: W-1 steps; at step t position p sends segment `holds(p - t)` to the next
 * position and receives segment `holds(p - t - 1)` from the previous one, handing each received
 * piece to `use` with the piece of its own buffer it belongs to, then to `then` (once per piece,
 * after the pass's last step: avg divides there).
 */
export interface RingPass {
  readonly holds: (position: number) => number;
  readonly use: (target: Uint8Array, received: Uint8Array) => Observable<unknown>;
  /** Received pieces replace this rank's (`use` is `place`): the links may write them straight there. */
  readonly receivesInPlace?: boolean;
  /**
   * Where this pass sends a segment from when that is not where it is received (by id, as
   * `segments`): a segment sent before anything was folded into it may go straight from the
   * caller's tensor.
   */
  readonly sendsFrom?: readonly (readonly Piece[])[];
  readonly then?: (piece: Piece) => Observable<unknown>;
}

/**
 * Runs passes round a ring (the reduce-scatter and all-gather of a ring all-reduce; either alone)
 * as one pipeline per piece. What a rank sends at step t is exactly what it received (and folded)
 * at step t-1, piece for piece, so piece k goes on as soon as its own predecessor has arrived,
 * not when the whole step has: steps and passes overlap and the links stay busy. Each step's
 * receive waits the session timeout from when its piece gets there. Memory stays safe without
 * copies: a piece is overwritten only by a message whose sending required this rank's earlier
 * send of that piece to have arrived.
 *
 * `segments[id]` are the pieces of segment `id` in this rank's buffer. Tags number steps from 0
 * over all passes (see docs/protocol.md 9.6).
 */
export function ringSchedule(links: Links, wiring: RingWiring, segments: readonly (readonly Piece[])[], passes: readonly RingPass[]): Observable<never> {
  const size = wiring.order.length;
  const stepCount = passes.length * (size - 1);
  if (stepCount > MAX_STEPS) throw new ConfigurationError(`a ring of ${size} ranks needs more than the ${MAX_STEPS} steps its tags can number`);
  if (stepCount === 0) return EMPTY;
  const { position, next, previous } = ringPosition(wiring.order, links.rank);
  const railOf = (piece: number) => (wiring.channel + piece) % links.rails;
  const tagOf = (step: number, piece: number) => pieceTag(RING_TAG_PREFIX, wiring.sequence, wiring.channel, step, piece);
  const steps = passes.flatMap((pass) =>
    Array.from({ length: size - 1 }, (_, t) => ({
      pass,
      sends: (pass.sendsFrom ?? segments)[pass.holds(mod(position - t, size))]!,
      receives: segments[pass.holds(mod(position - t - 1, size))]!,
      last: t === size - 2,
    })),
  );
  const pieceCount = Math.max(...segments.map((pieces) => pieces.length));
  // Step t of piece k: send what step t-1 brought, while step t's own message arrives (a message
  // that comes before its receive is posted waits in the link's matcher); once it has arrived and
  // been used (and, after a pass's last step, `then`), step t+1 of that piece starts.
  return pieceWork((start) => {
    const held = new Set<Uint8Array>();
    const step = (piece: number, index: number): void => {
      if (index === stepCount) return;
      const current = steps[index]!;
      const sent = current.sends[piece];
      if (sent !== undefined) {
        start(links.send(railOf(piece), next, tagOf(index, piece), sent.bytes, { elementType: wiring.elementType, count: sent.elements }));
      }
      const target = current.receives[piece];
      if (target === undefined) {
        step(piece, index + 1);
        return;
      }
      const { pass } = current;
      const advance = () => step(piece, index + 1);
      const used = (bytes: Uint8Array) => {
        held.delete(bytes);
        // A payload received in place is the caller's memory (perhaps from a pool once, as a
        // point-to-point result is): never the pool's to take back.
        if (bytes !== target.bytes) links.release(bytes);
        if (current.last && pass.then !== undefined) start(pass.then(target), advance);
        else advance();
      };
      const shape = { elementType: wiring.elementType, count: target.elements };
      const into = pass.receivesInPlace ? target.bytes : undefined;
      start(links.receive(railOf(piece), previous, tagOf(index, piece), shape, into), (bytes) => {
        if (bytes !== target.bytes) held.add(bytes);
        start(pass.use(target.bytes, bytes), () => used(bytes));
      });
    };
    for (let piece = 0; piece < pieceCount; piece++) step(piece, 0);
    // A piece whose use was cut short goes back to the pool all the same.
    return () => {
      for (const bytes of held) links.release(bytes);
    };
  });
}

/**
 * A ring folds each received piece (about `PIECE_BYTES`, so its kernel reads about twice that) on
 * the JS thread: a worker round trip costs more than the fold itself there (bench/kernels: a 2 MiB
 * read takes 35 us in place against 56 us queued) and takes CPU from the transfers it should
 * overlap with (64 MiB all-reduce at 2 ranks: 167 -> 118 ms). Larger folds (a tuned-up piece
 * size) still go to a worker.
 */
export const FOLD_IN_PLACE_BYTES = 4 * PIECE_BYTES;

/** A received piece is folded into this rank's with `op` (the reduce-scatter half; avg sums). */
export function fold(dtype: DType, op: ReduceOp): RingPass['use'] {
  return (target, received) => scheduleAccumulate({ dtype, op, accumulator: target, source: received }, FOLD_IN_PLACE_BYTES);
}

/**
 * Folding into memory that does not hold this rank's values yet (a result other than the input,
 * scratch): each piece folded into is paired with this rank's own piece of the same elements,
 * which stays untouched, and `foldOnto` copies it there just before folding the received piece in
 * (own op received, as `fold`), so the copy is still in the cache when the kernel reads it.
 */
export class OwnPieces {
  private readonly own = new Map<Uint8Array, Uint8Array>();

  /** Pairs `targets` with `sources`, cut alike (the same elements, piece for piece). */
  pair(targets: readonly Piece[], sources: readonly Piece[]): void {
    targets.forEach((piece, index) => this.own.set(piece.bytes, sources[index]!.bytes));
  }

  foldOnto(dtype: DType, op: ReduceOp): RingPass['use'] {
    const into = fold(dtype, op);
    return (target, received) =>
      defer(() => {
        target.set(this.own.get(target)!);
        return into(target, received);
      });
  }
}

/** A received piece takes the place of this rank's copy (the all-gather half); nothing to do if it was received in place. */
export function place(target: Uint8Array, received: Uint8Array): Observable<never> {
  return defer(() => {
    if (target !== received) target.set(received);
    return EMPTY;
  });
}
