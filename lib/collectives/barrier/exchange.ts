import { map, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext } from '../algorithm.js';
import { exchangeOnMesh } from '../mesh-exchange.js';
import { NO_DATA } from '../exchange-message.js';

/** Barrier over the mesh: one round of descriptors, every rank hears from every rank. */
export function exchangeBarrier(links: Links, _request: Record<string, never>, context: CollectiveContext): Observable<void> {
  return exchangeOnMesh(links, context, { opcode: Opcode.Barrier }, NO_DATA).pipe(map(() => undefined));
}
