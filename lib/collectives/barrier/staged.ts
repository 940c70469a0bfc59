import { map, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext } from '../algorithm.js';

/** Barrier through the coordinator: its response comes once every rank has entered. */
export function stagedBarrier(_links: Links, _request: Record<string, never>, context: CollectiveContext): Observable<void> {
  return context.coordinate({ opcode: Opcode.Barrier }, []).pipe(map(() => undefined));
}
