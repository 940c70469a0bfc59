import { map, type Observable, throwError } from 'rxjs';
import { MAX_FRAME_PAYLOAD_BYTES } from '../protocol/constants.js';
import { checkRank } from './arguments.js';
import { type Contribution, contribute, decodeObject } from './object-codec.js';

/** The session's all-to-all-v on bytes: what each object collective is, once. */
export type AllToAllVBytes = (data: Uint8Array, sendCounts: readonly number[]) => Observable<{ data: Uint8Array; counts: number[] }>;

/**
 * The most bytes one rank's value may serialize to in an object collective of `worldSize` ranks:
 * a W-th of a frame, less its counts prefix (8 bytes per rank), so that what any rank sends or
 * receives (its value to every rank, or every rank's value) is one frame on either transport.
 */
export function objectLimit(worldSize: number): number {
  return Math.floor((MAX_FRAME_PAYLOAD_BYTES - 8 * worldSize) / worldSize);
}

/**
 * The object collectives (torch's `broadcast_object_list`, `all_gather_object`,
 * `gather_object`; mpi4py's `bcast`, `allgather`, `gather`): each is **one** all-to-all-v of
 * serialized values (lib/session/object-codec.ts), its counts saying every value's size, so a
 * rank needs no other's size beforehand and the call takes one place in the collective order,
 * submitted at the call like every collective. A value v8 refuses, or one over `objectLimit`,
 * travels as a refusal notice: every rank that would have received it fails with the same typed
 * error naming the rank (the lowest such rank, when several), and the collective completes.
 */
export class ObjectCollectives {
  constructor(
    private readonly allToAllV: AllToAllVBytes,
    private readonly rank: number,
    private readonly worldSize: number,
  ) {}

  /** `root`'s value on every rank: the root sends its bytes to every rank, the others nothing. */
  broadcast<T>(value: T, root: number): Observable<T> {
    const operation = 'broadcastObject';
    try {
      checkRank(root, this.worldSize, 'root');
    } catch (error) {
      return throwError(() => error);
    }
    const mine = this.rank === root ? this.contribute(value, operation) : null;
    return this.exchange(mine, () => true).pipe(map((rows) => this.decode(rows, mine, operation, [root])[0] as T));
  }

  /** Every rank's value, in rank order, on every rank. */
  allGather<T>(value: T): Observable<T[]> {
    const operation = 'allGatherObject';
    const mine = this.contribute(value, operation);
    return this.exchange(mine, () => true).pipe(map((rows) => this.decode(rows, mine, operation, this.ranks()) as T[]));
  }

  /** Every rank's value, in rank order, on `root`; null elsewhere (a rank whose own value failed throws). */
  gather<T>(value: T, root: number): Observable<T[] | null> {
    const operation = 'gatherObject';
    try {
      checkRank(root, this.worldSize, 'root');
    } catch (error) {
      return throwError(() => error);
    }
    const mine = this.contribute(value, operation);
    return this.exchange(mine, (destination) => destination === root).pipe(
      map((rows) => {
        if (this.rank !== root) {
          if (mine.refusal !== null) throw mine.refusal;
          return null;
        }
        return this.decode(rows, mine, operation, this.ranks()) as T[];
      }),
    );
  }

  private contribute(value: unknown, operation: string): Contribution {
    return contribute(value, this.rank, objectLimit(this.worldSize), operation);
  }

  /** One all-to-all-v: `mine`'s bytes to every destination `to` picks (null: nothing to anyone); the rows received, by source. */
  private exchange(mine: Contribution | null, to: (destination: number) => boolean): Observable<Uint8Array[]> {
    const bytes = mine?.bytes ?? new Uint8Array(0);
    const sendCounts = Array.from({ length: this.worldSize }, (_, destination) => (mine !== null && to(destination) ? bytes.length : 0));
    const data = new Uint8Array(sendCounts.reduce((sum, count) => sum + count, 0));
    let offset = 0;
    for (const count of sendCounts) {
      data.set(bytes.subarray(0, count), offset);
      offset += count;
    }
    return this.allToAllV(data, sendCounts).pipe(
      map(({ data: received, counts }) => {
        let at = 0;
        return counts.map((count) => received.subarray(at, (at += count)));
      }),
    );
  }

  /** The values of `sources`' rows, in order; this rank's own refusal is thrown as its own error (v8's reason its cause). */
  private decode(rows: readonly Uint8Array[], mine: Contribution | null, operation: string, sources: readonly number[]): unknown[] {
    return sources.map((source) => {
      if (source === this.rank && mine?.refusal != null) throw mine.refusal;
      return decodeObject(rows[source]!, source, operation);
    });
  }

  private ranks(): number[] {
    return Array.from({ length: this.worldSize }, (_, rank) => rank);
  }
}
