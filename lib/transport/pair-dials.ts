/**
 * The rule by which a pair of ranks opens its links on demand (docs/architecture.md, "Links on
 * demand"), for one kind of link (a rail, a rail's data link). Each direction of a pair has its
 * own link, always dialled by the rank that receives on it (only a socket a process opened itself
 * can be read straight into place, direct-reads.ts), so no two dials ever compete for one link:
 * a rank dials its own when it first needs the pair (it sends to the peer, or receives from it),
 * or when the peer's link to it comes in first (the peer needs the pair: it will send, or wait for
 * this rank's data). Whatever the order of the two ranks' first uses, each rank dials once and
 * the pair ends with one link each way (spec/transport/pair-dials.spec.ts).
 *
 * Generic in the key (which peer, which link) so that its property test runs it without a socket;
 * `PeerMesh` keys it by the link's index.
 */
export class PairDials<K> {
  /** This rank's own dial of each pair it opened, by key: started once, kept (its failure too). */
  private readonly dials = new Map<K, Promise<void>>();

  constructor(private readonly dial: (key: K) => Promise<void>) {}

  /** This rank needs the pair: dials its own link, once; resolves once that link is open. */
  need(key: K): Promise<void> {
    let dialled = this.dials.get(key);
    if (dialled === undefined) {
      dialled = this.dial(key);
      this.dials.set(key, dialled);
    }
    return dialled;
  }

  /** The peer's link of the pair came in: it needs the pair, so this rank dials its own (its failure is `dial`'s to report). */
  accepted(key: K): void {
    this.need(key).catch(() => undefined);
  }

  /** Whether this rank dialled (or is dialling) the pair's link. */
  dialled(key: K): boolean {
    return this.dials.has(key);
  }
}
