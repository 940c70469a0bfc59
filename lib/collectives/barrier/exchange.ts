import { map, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext } from '../algorithm.js';
import { exchangeOnMesh, NO_DATA } from '../mesh-exchange.js';

/** Barrier over the mesh: one round of descriptors, every rank hears from every rank. */
export function exchangeBarrier(links: Links, _request: Record<string, never>, context: CollectiveContext): Observable<void> {
  return exchangeOnMesh(links, context, { opcode: Opcode.Barrier }, NO_DATA).pipe(map(() => undefined));
}
