import { defer, type Observable } from 'rxjs';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import type { Links } from '../transport/links/links.js';
import type { CollectiveContext } from './algorithm.js';
import { descriptorOf } from './descriptor.js';
import { exchangeAllPairs } from './exchange-all-pairs.js';
import { exchangeRelayed, HUB_RANK } from './exchange-relayed.js';
import { peersFrom } from './pairwise-family.js';
import { type Schedule, span } from './schedule/schedule.js';

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

/**
 * The exchange's messages at `rank` as a schedule, for the cost model only (./choice-cost.ts): it
 * runs as its own code, not a schedule. Every rank contributes `bytes`; between all pairs each
 * sends them to every other rank; relayed, each sends them to the hub, which replies to each with
 * all W ranks' (W x `bytes`) once it has them all. Every rank then reads the W contributions
 * (a reduction's fold, a gather's copies). With `bytes` 0 it is the JS plane's agreement before a
 * schedule (`agreeOnPeerData`).
 */
export function exchangeShape(worldSize: number, bytes: number): (rank: number) => Schedule {
  const relayed = worldSize > ALL_PAIRS_MAX_WORLD_SIZE;
  return (rank) => {
    const own = span('input', 0, bytes);
    const reading = (from: number) => ({ target: span('output', 0, bytes), sources: Array.from({ length: worldSize }, () => own), after: Array.from({ length: from }, (_, receive) => ({ receive })), op: 'sum' as const, divisor: 1 });
    const peers = peersFrom(rank, worldSize);
    const base = { algorithm: 'exchange', layout: '', tagPrefix: 0, pieceScale: 1, scratchBytes: 0 };
    if (!relayed) {
      return { ...base, sends: peers.map((peer) => ({ peer, span: own, step: 0, channel: 0, after: null })), receives: peers.map((peer) => ({ peer, span: own, step: 0, channel: 0 })), folds: [reading(peers.length)] };
    }
    const reply = span('scratch', 0, bytes * worldSize);
    if (rank !== HUB_RANK) {
      return { ...base, sends: [{ peer: HUB_RANK, span: own, step: 0, channel: 0, after: null }], receives: [{ peer: HUB_RANK, span: reply, step: 1, channel: 0 }], folds: [reading(1)] };
    }
    const gathered = { parts: peers.map((_, receive) => ({ receive })), skip: 0 };
    return {
      ...base,
      sends: peers.map((peer) => ({ peer, span: reply, step: 1, channel: 0, after: gathered })),
      receives: peers.map((peer) => ({ peer, span: own, step: 0, channel: 0 })),
      folds: [reading(peers.length)],
    };
  };
}
