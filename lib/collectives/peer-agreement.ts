import { map, type Observable } from 'rxjs';
import { FLAG_PEER_DATA } from '../protocol/constants.js';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import type { CollectiveContext } from './algorithm.js';
import { requestLayoutHash } from './descriptor.js';

/**
 * Agrees, on the JS plane of a session that agrees at the coordinator (tcp_host_staged), on a
 * collective whose data moves over the links: a PEER_DATA request, its tag the layout hash
 * (docs/protocol.md 9.6); emits the sequence its tags use. The layout (the algorithm, its ring
 * order, its channels) is part of what is agreed, so ranks configured with different rings fail at
 * once, named, instead of waiting on each other. (On the mesh the schedule's own links carry the
 * agreement: ./schedule/link-agreement.ts.)
 */
export function agreeAtCoordinator(context: CollectiveContext, request: CollectiveRequest, layout: string): Observable<bigint> {
  return context
    .coordinate({ ...request, flags: (request.flags ?? 0) | FLAG_PEER_DATA, tag: requestLayoutHash(request, layout) }, [])
    .pipe(map((response) => response.header.sequence));
}
