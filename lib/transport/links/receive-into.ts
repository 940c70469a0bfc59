import { map, type Observable } from 'rxjs';
import type { ExpectedShape, Links } from './links.js';

/**
 * Receives the next message from `peer` on `rail` with `tag` into `target` (exactly its payload's
 * size) and emits `target`: the links write it there as it arrives where they can, else it is
 * copied there and the memory it came in goes back to the links. A payload received in place is
 * the caller's memory, never the links' to take back. `waitMs` as `Links.receive`'s.
 */
export function receiveInto(links: Links, rail: number, peer: number, tag: bigint, shape: ExpectedShape, target: Uint8Array, waitMs?: number): Observable<Uint8Array> {
  return links.receive(rail, peer, tag, shape, target, waitMs).pipe(
    map((bytes) => {
      if (bytes !== target) {
        target.set(bytes);
        links.release(bytes);
      }
      return target;
    }),
  );
}
