import { ConfigurationError } from '../errors.js';

/**
 * How the ranks complete the endpoint table among themselves (docs/protocol.md 8.3, "The endpoint
 * gather"): the coordinator tells each rank only its own entry and its ring successor's, and each
 * rank then knows the run of entries that starts at itself. In every round a rank that knows the
 * ranks `rank .. rank + m` asks the last of them, `rank + m`, for the run that follows (its own
 * `m` entries after itself, fewer at the end): `m` doubles each round (1, 2, 4, ...) until it
 * reaches `W - 1`, so every rank has the whole table after ceil(log2(W - 1)) rounds, having
 * received W - 2 entries, over one link per round (pointer jumping along the ring, as NCCL's
 * bootstrap completes its ring's addresses). The partner asked in a round has answered every
 * request of earlier rounds, so nothing waits in a cycle: an answer needs only entries of ranks
 * further along the ring, whose rounds are shorter.
 *
 * Generic in the entry (`E`) so that its property test runs it over any arrival order without a
 * socket; `GatherLinks` (bootstrap-links.ts) carries it over the ranks' authenticated links.
 */
export class EndpointGather<E> {
  /** `known[k]` is rank `(rank + k) mod W`'s entry. */
  private readonly known: E[];
  /** Requests of partners behind this rank waiting for entries it has not learnt yet. */
  private waiting: { readonly count: number; readonly answer: (entries: E[]) => void; readonly fail: (error: unknown) => void }[] = [];
  private failure: { readonly error: unknown } | null = null;

  constructor(
    readonly rank: number,
    readonly worldSize: number,
    own: E,
    successor: E,
  ) {
    this.known = worldSize === 1 ? [own] : [own, successor];
  }

  /** The distances a rank asks at, in order (its partners are `rank + distance`): 1, 2, 4, ... below W - 1. */
  static distances(worldSize: number): number[] {
    const distances: number[] = [];
    for (let m = 1; m < worldSize - 1; m *= 2) distances.push(m);
    return distances;
  }

  /** How many entries a rank asking at `distance` wants: the run after its partner, up to the end of the ring. */
  static wanted(worldSize: number, distance: number): number {
    return Math.min(distance, worldSize - 1 - distance);
  }

  /**
   * Runs the rounds, asking with `ask(distance, count, partner)` rank `rank + distance` (whose
   * entry is `partner`) for the `count` entries after it, and returns the table by rank. Rejects
   * with the first failure of an ask.
   */
  async run(ask: (distance: number, count: number, partner: E) => Promise<E[]>): Promise<E[]> {
    try {
      for (const distance of EndpointGather.distances(this.worldSize)) {
        const count = EndpointGather.wanted(this.worldSize, distance);
        const entries = await ask(distance, count, this.known[distance]!);
        if (entries.length !== count) {
          throw new ConfigurationError(`rank ${(this.rank + distance) % this.worldSize} sent ${entries.length} endpoint entries to rank ${this.rank}, which asked for ${count}`);
        }
        this.known.push(...entries);
        this.answerWaiting();
      }
    } catch (error) {
      this.fail(error);
      throw error;
    }
    return Array.from({ length: this.worldSize }, (_, rank) => this.known[(rank - this.rank + this.worldSize) % this.worldSize]!);
  }

  /**
   * The entries the rank `distance` behind this one asks for (the `wanted` ones after this rank),
   * once this rank knows them; rejects where `distance` is no partner's, or this rank's own
   * gather failed first.
   */
  entriesFor(distance: number): Promise<E[]> {
    if (!EndpointGather.distances(this.worldSize).includes(distance)) {
      return Promise.reject(new ConfigurationError(`rank ${(this.rank - distance + this.worldSize) % this.worldSize} is no partner of rank ${this.rank} in the endpoint gather of ${this.worldSize} ranks`));
    }
    const count = EndpointGather.wanted(this.worldSize, distance);
    if (this.known.length > count) return Promise.resolve(this.known.slice(1, count + 1));
    if (this.failure !== null) return Promise.reject(this.failure.error);
    return new Promise((answer, fail) => this.waiting.push({ count, answer, fail }));
  }

  /** Ends the gather: every request still waiting fails with `error`. */
  fail(error: unknown): void {
    if (this.failure !== null) return;
    this.failure = { error };
    const waiting = this.waiting;
    this.waiting = [];
    for (const each of waiting) each.fail(error);
  }

  private answerWaiting(): void {
    const ready = this.waiting.filter((each) => this.known.length > each.count);
    this.waiting = this.waiting.filter((each) => this.known.length <= each.count);
    for (const each of ready) each.answer(this.known.slice(1, each.count + 1));
  }
}
