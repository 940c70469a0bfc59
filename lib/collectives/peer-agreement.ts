import { defer, map, type Observable } from 'rxjs';
import { FLAG_PEER_DATA } from '../protocol/constants.js';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import type { Links } from '../transport/links/links.js';
import type { CollectiveContext } from './algorithm.js';
import { exchangeOnMesh } from './mesh-exchange.js';
import { NO_DATA } from './exchange-message.js';
import { requestLayoutHash } from './descriptor.js';

/**
 * Agrees, on the JS plane, on a collective whose data moves over the links; emits the sequence
 * its tags use. The layout (the algorithm, its ring order, its channels) is part of what is
 * agreed, so ranks configured with different rings fail at once, named, instead of waiting on
 * each other.
 *
 * Where the session agrees on the mesh (`context.agreement`, tcp_peer) a descriptor-only mesh
 * exchange; elsewhere the coordinator checks a PEER_DATA request (docs/protocol.md 9.6).
 */
export function agreeOnPeerData(links: Links, context: CollectiveContext, request: CollectiveRequest, layout: string): Observable<bigint> {
  if (context.agreement === 'mesh') {
    return defer(() => {
      const sequence = context.nextMeshSequence();
      return exchangeOnMesh(links, context, request, NO_DATA, layout, sequence).pipe(map(() => sequence));
    });
  }
  return context
    .coordinate({ ...request, flags: (request.flags ?? 0) | FLAG_PEER_DATA, tag: requestLayoutHash(request, layout) }, [])
    .pipe(map((response) => response.header.sequence));
}
