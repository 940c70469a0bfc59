import { concat, EMPTY, defer, finalize, ignoreElements, merge, mergeMap, type Observable } from 'rxjs';
import { ConfigurationError } from '../errors.js';
import type { ElementType } from '../protocol/element-type.js';
import type { Links } from '../transport/links/links.js';
import { MAX_STEPS, type Piece, pieceTag, ringPosition } from './peer-data.js';

/** Ring messages carry tags under this prefix ("RG"). */
export const RING_TAG_PREFIX = 0x5247;

const mod = (value: number, modulus: number) => ((value % modulus) + modulus) % modulus;

/** Where this rank sits on one ring and how its messages are tagged and spread over the rails. */
export interface RingWiring {
  readonly order: readonly number[];
  readonly sequence: bigint;
  readonly channel: number;
  readonly elementType: ElementType;
}

/**
 * One pass round a ring, the step both halves of a ring all-reduce (and a ring all-gather or
 * reduce-scatter alone) are made of. `segments[id]` are the pieces of segment `id` in this rank's
 * buffer; at step t (0..W-2) position p sends segment `holds(p - t)` to the next position and
 * receives segment `holds(p - t - 1)` from the previous one, handing each received piece to `use`
 * with the piece of its own buffer it belongs to. Steps run one after the other; within a step
 * every piece is in flight at once. Tags number steps from `firstStep`.
 */
export function ringPass(
  links: Links,
  wiring: RingWiring,
  pass: {
    readonly segments: readonly (readonly Piece[])[];
    readonly holds: (position: number) => number;
    readonly firstStep: number;
    readonly use: (target: Uint8Array, received: Uint8Array) => Observable<unknown>;
  },
): Observable<never> {
  const size = wiring.order.length;
  if (pass.firstStep + size - 1 > MAX_STEPS) throw new ConfigurationError(`a ring of ${size} ranks needs more than the ${MAX_STEPS} steps its tags can number`);
  const { position, next, previous } = ringPosition(wiring.order, links.rank);
  const railOf = (piece: number) => (wiring.channel + piece) % links.rails;
  const tagOf = (step: number, piece: number) => pieceTag(RING_TAG_PREFIX, wiring.sequence, wiring.channel, step, piece);
  const segment = (position: number) => pass.segments[pass.holds(mod(position, size))]!;
  const send = (step: number, pieces: readonly Piece[]) =>
    concat(...pieces.map((piece) => links.send(railOf(piece.index), next, tagOf(step, piece.index), piece.bytes, { elementType: wiring.elementType, count: piece.elements })));
  const receive = (step: number, pieces: readonly Piece[]) =>
    merge(
      ...pieces.map((piece) =>
        links
          .receive(railOf(piece.index), previous, tagOf(step, piece.index), { elementType: wiring.elementType, count: piece.elements })
          .pipe(mergeMap((received) => pass.use(piece.bytes, received).pipe(finalize(() => links.release(received))))),
      ),
    );
  const steps = Array.from({ length: size - 1 }, (_, t) =>
    merge(send(pass.firstStep + t, segment(position - t)), receive(pass.firstStep + t, segment(position - t - 1))).pipe(ignoreElements()),
  );
  return concat(...steps).pipe(ignoreElements());
}

/** A received piece takes the place of this rank's copy (the all-gather half). */
export function place(target: Uint8Array, received: Uint8Array): Observable<never> {
  return defer(() => {
    target.set(received);
    return EMPTY;
  });
}
