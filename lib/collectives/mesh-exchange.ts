import { defer, type Observable } from 'rxjs';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import type { Links } from '../transport/links/links.js';
import type { CollectiveContext } from './algorithm.js';
import { descriptorOf } from './descriptor.js';
import { exchangeAllPairs } from './exchange-all-pairs.js';
import { exchangeRelayed } from './exchange-relayed.js';

/**
 * Largest world whose exchange goes between all pairs; larger worlds relay through the hub. At 2
 * ranks the all-pairs exchange is one hop where any relay takes two; from 3 ranks its W(W-1)
 * messages cost more CPU than the relay's 2(W-1) save in hops where ranks share cores.
 */
export const ALL_PAIRS_MAX_WORLD_SIZE = 2;

/**
 * The agreement of a collective that stays off the coordinator (tcp_peer), with its data in the
 * same messages: every rank's descriptor is checked against every other's (a mismatch names both
 * ranks and both descriptors, as the coordinator's agreement would), ranks that do not come within
 * the session timeout are named as missing, and either failure aborts the job on every rank.
 * Emits every rank's data, by rank (this rank's own `data` at its index; the others are views of
 * received messages).
 *
 * Between all pairs in small worlds, through the hub above (`exchangeAllPairs`, `exchangeRelayed`).
 */
export function exchangeOnMesh(
  links: Links,
  context: CollectiveContext,
  request: CollectiveRequest,
  data: Uint8Array,
  layout = '',
  sequence?: bigint,
): Observable<Uint8Array[]> {
  return defer(() => {
    const own = descriptorOf(request, layout);
    const exchange = links.worldSize <= ALL_PAIRS_MAX_WORLD_SIZE ? exchangeAllPairs : exchangeRelayed;
    return exchange(links, context, own, data, sequence ?? context.nextMeshSequence());
  });
}
