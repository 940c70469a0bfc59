import type { ElementType } from '../protocol/element-type.js';
import type { Links } from '../transport/links/links.js';
import { receiveInto } from '../transport/links/receive-into.js';
import { mod, type Piece, pieceTag, piecesOf } from './peer-data.js';
import type { StartWork } from './piece-work.js';
import type { RingPass } from './ring-pass.js';

/** Pairwise messages carry tags under this prefix ("PW"). */
export const PAIRWISE_TAG_PREFIX = 0x5057;

/**
 * The pairwise algorithms cut their segments into pieces of this many times the ring's piece
 * size. Each piece is a message on every link and a fold, and where these algorithms run (ranks
 * sharing one host, often more ranks than cores) the CPU each message costs limits them more than
 * pipelining depth does. 4 ranks on 2 cores, alternating runs, 1 -> 2 MiB pieces: 64 MiB
 * all-reduce 183 -> 167 ms, broadcast 79 -> 68 ms; 3 ranks 64 MiB all-reduce 107 -> 94 ms; 16 MiB
 * 44 -> 43 ms. A piece's fold (twice its bytes read) still runs in place (`FOLD_IN_PLACE_BYTES`).
 */
export const PAIRWISE_PIECE_SCALE = 2;

/** The pieces of elements [start, start + count) of `buffer` for a pairwise algorithm (`piecesOf`, scaled). */
export function pairwisePieces(buffer: Uint8Array, width: number, range: { start: number; count: number }, pieceBytes: number): Piece[] {
  return piecesOf(buffer, width, range, PAIRWISE_PIECE_SCALE * pieceBytes);
}

/** The tag's step: contributions travel to their segment's owner, then segments from their owner. */
const SCATTER_STEP = 0;
const GATHER_STEP = 1;

/**
 * The two steps the pairwise algorithms are made of (docs/protocol.md 9.6), run inside one
 * `pieceWork`: rank r owns segment r; `scatter` sends every owner its segment and folds what this
 * rank receives for its own (the reduce-scatter), `sendToAll` and `gather` move owned segments to
 * every rank (the all-gather; the broadcast, where only the root owns one). Pieces are spread over
 * the rails by index; tags carry the step and the piece.
 */
export class PairwiseSteps {
  /** Every other rank, from rank + 1 on: every rank starts its sends with a different peer. */
  private readonly peers: readonly number[];
  /** Received contributions not yet folded, given back to the links if the run ends first (`release`). */
  private readonly held = new Set<Uint8Array>();
  private readonly foldOrder: readonly number[];

  constructor(
    private readonly links: Links,
    private readonly start: StartWork,
    private readonly sequence: bigint,
    private readonly elementType: ElementType,
  ) {
    const { rank, worldSize } = links;
    this.peers = Array.from({ length: worldSize - 1 }, (_, index) => mod(rank + 1 + index, worldSize));
    this.foldOrder = [...this.peers].sort((a, b) => a - b);
  }

  /**
   * Step 0: sends each peer `sendsTo(peer)`, its segment's pieces from this rank; receives every
   * peer's pieces of this rank's segment and, once all of a piece's have arrived, copies `own`'s
   * piece there (unless it is the target itself), folds them in ascending rank order (so the bits
   * do not depend on arrival order), then calls `reduced` with the piece.
   */
  scatter(sendsTo: (peer: number) => readonly Piece[], targets: readonly Piece[], own: readonly Piece[], fold: RingPass['use'], reduced: (target: Piece) => void): void {
    for (const peer of this.peers) for (const piece of sendsTo(peer)) this.send(SCATTER_STEP, peer, piece);
    for (const target of targets) {
      const contributions = new Array<Uint8Array>(this.links.worldSize);
      const foldFrom = (at: number): void => {
        if (at === this.foldOrder.length) return reduced(target);
        const bytes = contributions[this.foldOrder[at]!]!;
        this.start(fold(target.bytes, bytes), () => {
          this.held.delete(bytes);
          this.links.release(bytes);
          foldFrom(at + 1);
        });
      };
      const ownPiece = own[target.index]!;
      let missing = this.peers.length;
      const arrived = () => {
        if (ownPiece !== target) target.bytes.set(ownPiece.bytes);
        foldFrom(0);
      };
      if (missing === 0) arrived();
      const rail = this.railOf(target);
      const tag = this.tagOf(SCATTER_STEP, target);
      const shape = this.shapeOf(target);
      for (const peer of this.peers) {
        this.start(this.links.receive(rail, peer, tag, shape), (bytes) => {
          this.held.add(bytes);
          contributions[peer] = bytes;
          if (--missing === 0) arrived();
        });
      }
    }
  }

  /** Step 1, this rank's part: sends `piece` (of the segment it owns) to every peer. */
  sendToAll(piece: Piece): void {
    for (const peer of this.peers) this.send(GATHER_STEP, peer, piece);
  }

  /** Step 1, the others' parts: every peer's segment (`segments(peer)`), received straight into it where the links can. */
  gather(segments: (peer: number) => readonly Piece[]): void {
    for (const peer of this.peers) {
      for (const target of segments(peer)) this.start(receiveInto(this.links, this.railOf(target), peer, this.tagOf(GATHER_STEP, target), this.shapeOf(target), target.bytes));
    }
  }

  /** Gives back what was received and not folded yet (the run's teardown). */
  release(): void {
    for (const bytes of this.held) this.links.release(bytes);
    this.held.clear();
  }

  private send(step: number, peer: number, piece: Piece): void {
    this.start(this.links.send(this.railOf(piece), peer, this.tagOf(step, piece), piece.bytes, this.shapeOf(piece)));
  }

  private railOf(piece: Piece): number {
    return piece.index % this.links.rails;
  }

  private tagOf(step: number, piece: Piece): bigint {
    return pieceTag(PAIRWISE_TAG_PREFIX, this.sequence, 0, step, piece.index);
  }

  private shapeOf(piece: Piece): { elementType: ElementType; count: number } {
    return { elementType: this.elementType, count: piece.elements };
  }
}
