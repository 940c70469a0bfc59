import { defer, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext } from '../algorithm.js';
import { dataPlaneOf, exchangeHeaders, nativeCollective } from '../native-collective.js';

/**
 * Barrier on the native data plane: an exchange of headers alone (on the wire, an all-reduce of
 * nothing). Every rank sends every other rank one message that is only the barrier's header, and
 * is through once it has every rank's (each checked as an all-reduce's would be: a rank in
 * another collective is named).
 */
export function nativeBarrier(links: Links, _request: Record<string, never>, context: CollectiveContext): Observable<void> {
  return defer(() => exchangeHeaders(dataPlaneOf(links), context, nativeCollective(context, { opcode: Opcode.Barrier })));
}
