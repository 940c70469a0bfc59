import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bestRingOrder,
  bestRingOrders,
  CollectiveTopology,
  EXACT_RING_SEARCH_MAX_RANKS,
  parseTopologyLinks,
  ringMetrics,
  type TopologyLink,
} from '../../lib/topology/index.js';
import { arbMetric, arbRingTopology } from './arbitraries.js';
import { expectConfigurationError } from './expect-configuration-error.js';

const NO_RING = 'invalid collective ring: topology does not contain a closed rank ring';

function rankOrder(worldSize: number): number[] {
  return Array.from({ length: worldSize }, (_, rank) => rank);
}

/** Symmetric links from `first-second:bandwidth:latency` text, as GX1_TOPOLOGY_LINKS writes them. */
function symmetricLinks(worldSize: number, links: readonly (readonly [number, number, number, number])[]): CollectiveTopology {
  return parseTopologyLinks(worldSize, links.map(([first, second, bandwidth, latency]) => `${first}-${second}:${bandwidth}:${latency}`).join(','));
}

/** The reference's `CollectiveTopology::uniform`: every pair at 32000 MB/s and 1000 ns. */
function uniform(worldSize: number): CollectiveTopology {
  const pairs = rankOrder(worldSize).flatMap((first) => rankOrder(worldSize).filter((second) => second > first).map((second) => [first, second, 32_000, 1_000] as const));
  return symmetricLinks(worldSize, pairs);
}

/** A link for every ordered pair of distinct ranks, with the metrics `metrics` gives it. */
function completeLinks(worldSize: number, metrics: (source: number, destination: number) => { bandwidthMbps: number; latencyNs: number }): TopologyLink[] {
  return rankOrder(worldSize).flatMap((source) =>
    rankOrder(worldSize)
      .filter((destination) => destination !== source)
      .map((destination) => ({ source, destination, ...metrics(source, destination) })),
  );
}

/** A complete symmetric topology where `ring` has fast links and every other pair is slow. */
function plantedRing(ring: readonly number[]): CollectiveTopology {
  const links = completeLinks(ring.length, (source, destination) => {
    const distance = Math.abs(ring.indexOf(source) - ring.indexOf(destination));
    const isFast = distance === 1 || distance === ring.length - 1;
    return { bandwidthMbps: isFast ? 4096 : 16, latencyNs: isFast ? 4096 : 65536 };
  });
  return new CollectiveTopology({ worldSize: ring.length, links });
}

/** The undirected edges of a ring, each once, sorted: the same for both of its directions. */
function ringEdges(order: readonly number[]): string[] {
  return order.map((rank, index) => {
    const next = order[(index + 1) % order.length]!;
    return `${Math.min(rank, next)}-${Math.max(rank, next)}`;
  }).sort();
}

// ---- The specification, written independently of the implementation ----

/** Lexicographic order of rank lists, by rank number (not as text: 10 comes after 9). */
function lexicographic(left: readonly number[], right: readonly number[]): number {
  const index = left.findIndex((rank, position) => rank !== right[position]);
  return index < 0 ? 0 : left[index]! - right[index]!;
}

type Score = readonly [bottleneck: bigint, totalBandwidth: bigint, totalLatency: bigint];

/** The score of a ring whose every edge has a link, summed in bigints (the reference's u128). */
function oracleScore(topology: CollectiveTopology, order: readonly number[]): Score {
  const links = order.map((rank, index) => topology.link(rank, order[(index + 1) % order.length]!)!);
  const bandwidths = links.map((link) => BigInt(link.bandwidthMbps));
  return [
    bandwidths.reduce((least, bandwidth) => (bandwidth < least ? bandwidth : least)),
    bandwidths.reduce((total, bandwidth) => total + bandwidth, 0n),
    links.reduce((total, link) => total + BigInt(link.latencyNs), 0n),
  ];
}

/** Orders rings best first: score, then the lexicographically smaller order. */
function byScoreThenOrder(topology: CollectiveTopology) {
  return (left: readonly number[], right: readonly number[]): number => {
    const [leftBottleneck, leftBandwidth, leftLatency] = oracleScore(topology, left);
    const [rightBottleneck, rightBandwidth, rightLatency] = oracleScore(topology, right);
    if (leftBottleneck !== rightBottleneck) return leftBottleneck > rightBottleneck ? -1 : 1;
    if (leftBandwidth !== rightBandwidth) return leftBandwidth > rightBandwidth ? -1 : 1;
    if (leftLatency !== rightLatency) return leftLatency < rightLatency ? -1 : 1;
    return lexicographic(left, right);
  };
}

function isClosed(topology: CollectiveTopology, order: readonly number[]): boolean {
  return order.every((rank, index) => topology.link(rank, order[(index + 1) % order.length]!) !== undefined);
}

/** Every ring from rank 0, in both directions, that has a link on each edge. */
function closedRings(topology: CollectiveTopology): number[][] {
  const permutations = (rest: number[]): number[][] =>
    rest.length === 0 ? [[]] : rest.flatMap((rank) => permutations(rest.filter((other) => other !== rank)).map((tail) => [rank, ...tail]));
  return permutations(rankOrder(topology.worldSize).slice(1))
    .map((tail) => [0, ...tail])
    .filter((order) => isClosed(topology, order));
}

/** Each undirected ring once, in its better direction (the smaller order on a tie). */
function preferredRings(topology: CollectiveTopology, rings: readonly number[][]): number[][] {
  const byEdges = new Map<string, number[][]>();
  for (const ring of rings) {
    const key = ringEdges(ring).join(' ');
    byEdges.set(key, [...(byEdges.get(key) ?? []), ring]);
  }
  return [...byEdges.values()].map((directions) => [...directions].sort(byScoreThenOrder(topology))[0]!);
}

/** The best ring by brute force: best score over every closed ring, then the smallest order. */
function bruteForceRingOrder(topology: CollectiveTopology): number[] | undefined {
  if (topology.worldSize === 1) return [0];
  return closedRings(topology).sort(byScoreThenOrder(topology))[0];
}

/**
 * The diverse selection by brute force: each round, the ring whose busiest edge was used least
 * so far, then the least total use, then the best score, then the smallest order.
 */
function bruteForceRingOrders(topology: CollectiveTopology, rings: readonly number[][], maximum: number): number[][] {
  const usage = new Map<string, number>();
  const used = (ring: readonly number[]) => ringEdges(ring).map((edge) => usage.get(edge) ?? 0);
  let remaining = [...rings];
  const selected: number[][] = [];
  while (selected.length < maximum && remaining.length > 0) {
    const ranked = [...remaining].sort((left, right) => {
      const [leftUse, rightUse] = [used(left), used(right)];
      const busiest = Math.max(...leftUse) - Math.max(...rightUse);
      const total = leftUse.reduce((sum, count) => sum + count, 0) - rightUse.reduce((sum, count) => sum + count, 0);
      return busiest || total || byScoreThenOrder(topology)(left, right);
    });
    const chosen = ranked[0]!;
    for (const edge of ringEdges(chosen)) usage.set(edge, (usage.get(edge) ?? 0) + 1);
    remaining = remaining.filter((ring) => ring !== chosen);
    selected.push(chosen);
  }
  return selected;
}

/** The nearest-neighbour ring from `start` (widest, then quickest, then lowest rank), from rank 0. */
function greedyFrom(topology: CollectiveTopology, start: number): number[] | undefined {
  const order = [start];
  while (order.length < topology.worldSize) {
    const last = order[order.length - 1]!;
    const next = rankOrder(topology.worldSize)
      .filter((rank) => !order.includes(rank) && topology.link(last, rank) !== undefined)
      .sort((left, right) => {
        const [leftLink, rightLink] = [topology.link(last, left)!, topology.link(last, right)!];
        return rightLink.bandwidthMbps - leftLink.bandwidthMbps || leftLink.latencyNs - rightLink.latencyNs || left - right;
      })[0];
    if (next === undefined) return undefined;
    order.push(next);
  }
  if (!isClosed(topology, order)) return undefined;
  return [...order.slice(order.indexOf(0)), ...order.slice(0, order.indexOf(0))];
}

/** What the search returns beyond EXACT_RING_SEARCH_MAX_RANKS, by the same rules, slowly. */
function bruteForceGreedyRingOrders(topology: CollectiveTopology, maximum: number): number[][] | undefined {
  const found = rankOrder(topology.worldSize).map((start) => greedyFrom(topology, start)).filter((ring): ring is number[] => ring !== undefined);
  const rings = found.flatMap((ring) => {
    const reversed = [0, ...ring.slice(1).reverse()];
    return isClosed(topology, reversed) ? [ring, reversed] : [ring];
  });
  if (rings.length === 0) return undefined;
  const preferred = preferredRings(topology, rings).sort(lexicographic);
  return bruteForceRingOrders(topology, preferred, maximum);
}

function expectSameAsOracle(actual: () => unknown, expected: unknown): void {
  if (expected === undefined) expectConfigurationError(actual, NO_RING);
  else expect(actual()).toEqual(expected);
}

describe('bestRingOrder', () => {
  it('complete_four_rank_topology_builds_three_edge_balanced_rings (seed)', () => {
    const orders = bestRingOrders(uniform(4), 64);
    expect(orders).toHaveLength(3);
    const edgeCounts = new Map<string, number>();
    for (const order of orders) {
      expect([...order].sort()).toEqual([0, 1, 2, 3]);
      for (const edge of ringEdges(order)) edgeCounts.set(edge, (edgeCounts.get(edge) ?? 0) + 1);
    }
    expect([...edgeCounts.entries()].sort()).toEqual(['0-1', '0-2', '0-3', '1-2', '1-3', '2-3'].map((edge) => [edge, 2]));
    expect(orders).toEqual([
      [0, 1, 2, 3],
      [0, 1, 3, 2],
      [0, 2, 1, 3],
    ]);
  });

  it('topology_prefers_the_high_bandwidth_closed_ring (seed)', () => {
    const topology = parseTopologyLinks(4, '0-1:100000:500,1-2:100000:500,2-3:100000:500,3-0:100000:500,0-2:10000:500,1-3:10000:500');
    const edges = ringEdges(bestRingOrder(topology));
    expect(edges).not.toContain('0-2');
    expect(edges).not.toContain('1-3');
  });

  it('has one ring of one rank, and a ring of two needs both directions linked', () => {
    expect(bestRingOrder(new CollectiveTopology({ worldSize: 1 }))).toEqual([0]);
    expect(bestRingOrders(new CollectiveTopology({ worldSize: 1 }), 3)).toEqual([[0]]);
    expect(bestRingOrders(plantedRing([0, 1]), 3)).toEqual([[0, 1]]);
    const oneWay = new CollectiveTopology({ worldSize: 2, links: [{ source: 0, destination: 1, bandwidthMbps: 1, latencyNs: 1 }] });
    expectConfigurationError(() => bestRingOrder(oneWay), NO_RING);
    expect(bestRingOrders(uniform(3), 0)).toEqual([]);
    expectConfigurationError(() => bestRingOrders(uniform(3), -1), 'ring order count -1 must be a non-negative integer');
  });

  it('routes around a slow link, in the reference canonical direction', () => {
    expect(bestRingOrder(plantedRing([0, 2, 1, 3]))).toEqual([0, 2, 1, 3]);
    expect(bestRingOrder(plantedRing([0, 5, 3, 1, 4, 2]))).toEqual([0, 2, 4, 1, 3, 5]);
  });

  it('breaks bottleneck ties by total bandwidth before latency', () => {
    // Every ring bottlenecks at 10 MB/s; [0, 1, 2, 3] carries the most in total, the others are quicker.
    const topology = parseTopologyLinks(4, '0-1:10:100,1-2:1000:100,2-3:1000:100,3-0:1000:100,1-3:10:1,0-2:10:1');
    expect(bestRingOrder(topology)).toEqual([0, 1, 2, 3]);
    expect(ringMetrics(topology, [0, 1, 2, 3])).toEqual({ bottleneckMbps: 10, totalBandwidthMbps: 3010, latencyNs: 400 });
    expect(ringMetrics(topology, [0, 2, 1, 3])).toEqual({ bottleneckMbps: 10, totalBandwidthMbps: 2020, latencyNs: 202 });
  });

  it('breaks the remaining ties by latency, then by the lexicographically smallest order', () => {
    // Every edge equally wide; only the 1->3 and 3->2 edges are quick.
    const links = completeLinks(4, (source, destination) => {
      const quick = (source === 1 && destination === 3) || (source === 3 && destination === 2);
      return { bandwidthMbps: 1024, latencyNs: quick ? 4 : 64 };
    });
    expect(bestRingOrder(new CollectiveTopology({ worldSize: 4, links }))).toEqual([0, 1, 3, 2]);
    const flat = links.map((link) => ({ ...link, latencyNs: 64 }));
    expect(bestRingOrder(new CollectiveTopology({ worldSize: 4, links: flat }))).toEqual([0, 1, 2, 3]);
  });

  it('judges an edge by its link, the slowest rail, not by rail or aggregate links', () => {
    const links = completeLinks(3, () => ({ bandwidthMbps: 1024, latencyNs: 64 }));
    // Fast rails and aggregates on 0->2->1->0 do not make it the better ring.
    const fast = [
      [0, 2],
      [2, 1],
      [1, 0],
    ] as const;
    const topology = new CollectiveTopology({
      worldSize: 3,
      rails: 2,
      links,
      railLinks: fast.flatMap(([source, destination]) => [0, 1].map((rail) => ({ source, destination, rail, bandwidthMbps: 4096, latencyNs: 1 }))),
      aggregateLinks: fast.map(([source, destination]) => ({ source, destination, bandwidthMbps: 8192 })),
    });
    expect(bestRingOrder(topology)).toEqual([0, 1, 2]);
    expect(ringMetrics(topology, [0, 2, 1])).toEqual({ bottleneckMbps: 1024, totalBandwidthMbps: 3072, latencyNs: 192 });
  });

  it('finds the closed ring of an incomplete topology, and fails only without one', () => {
    const ring = parseTopologyLinks(5, '0-3:64:64,3-1:64:64,1-4:64:64,4-2:64:64,2-0:64:64');
    expect(bestRingOrder(ring)).toEqual([0, 2, 4, 1, 3]);
    expect(bestRingOrders(ring, 4)).toEqual([[0, 2, 4, 1, 3]]);
    const path = parseTopologyLinks(3, '0-1:64:64,1-2:64:64');
    expectConfigurationError(() => bestRingOrder(path), NO_RING);
  });

  it('runs a ring whose links go one way only in that direction', () => {
    const oneWay = new CollectiveTopology({
      worldSize: 3,
      links: [
        { source: 0, destination: 2, bandwidthMbps: 64, latencyNs: 64 },
        { source: 2, destination: 1, bandwidthMbps: 64, latencyNs: 64 },
        { source: 1, destination: 0, bandwidthMbps: 64, latencyNs: 64 },
      ],
    });
    expect(bestRingOrder(oneWay)).toEqual([0, 2, 1]);
    expect(ringMetrics(oneWay, [0, 2, 1])).toEqual({ bottleneckMbps: 64, totalBandwidthMbps: 192, latencyNs: 192 });
  });

  it('ringMetrics rejects what is no ring of the world, or an edge without a link', () => {
    expect(ringMetrics(new CollectiveTopology({ worldSize: 1 }), [0])).toEqual({
      bottleneckMbps: Number.POSITIVE_INFINITY,
      totalBandwidthMbps: 0,
      latencyNs: 0,
    });
    expectConfigurationError(() => ringMetrics(uniform(3), [0, 1, 1]), 'invalid collective ring: rank 1 appears more than once');
    expectConfigurationError(() => ringMetrics(uniform(3), [0, 1]), 'invalid collective ring: contains 2 ranks, expected 3');
    const path = parseTopologyLinks(3, '0-1:64:64,1-2:64:64');
    expectConfigurationError(() => ringMetrics(path, [0, 1, 2]), 'invalid collective ring: ring edge 2-0 is not connected');
  });

  it('sums totals exactly beyond 2^53, as the reference sums in u128', () => {
    // The rings over the 3-0 link carry 1 MB/s more in total than [0, 1, 3, 2]. Near 2^55 a float
    // sum rounds that away; only exact sums rank [0, 2, 1, 3] above [0, 1, 3, 2] in the second pick.
    const big = Number.MAX_SAFE_INTEGER - 1;
    const topology = parseTopologyLinks(4, `0-1:${big}:1,1-2:${big}:1,2-3:${big}:1,3-0:${big + 1}:1,0-2:${big}:1,1-3:${big}:1`);
    expect(bestRingOrder(topology)).toEqual([0, 1, 2, 3]);
    expect(bestRingOrders(topology, 3)).toEqual([
      [0, 1, 2, 3],
      [0, 2, 1, 3],
      [0, 1, 3, 2],
    ]);
  });

  it(`scores every ring of ${EXACT_RING_SEARCH_MAX_RANKS} ranks within a second`, () => {
    const topology = uniform(EXACT_RING_SEARCH_MAX_RANKS);
    const started = performance.now();
    expect(bestRingOrder(topology)).toEqual(rankOrder(EXACT_RING_SEARCH_MAX_RANKS));
    expect(performance.now() - started).toBeLessThan(1000);
    const ring = [0, 7, 3, 8, 1, 5, 2, 6, 4];
    expect(ringMetrics(plantedRing(ring), bestRingOrder(plantedRing(ring))).bottleneckMbps).toBe(4096);
  });

  it(`beyond ${EXACT_RING_SEARCH_MAX_RANKS} ranks, keeps the best greedy ring from every start rank`, () => {
    // From rank 0 the greedy walk ends at rank 9 and must close over the slow 9-0 link; from
    // rank 8 it avoids that link.
    const worldSize = EXACT_RING_SEARCH_MAX_RANKS + 1;
    const pairs = rankOrder(worldSize).flatMap((first) =>
      rankOrder(worldSize).filter((second) => second > first).map((second) => [first, second, first === 0 && second === 9 ? 1 : 100, 64] as const),
    );
    const topology = symmetricLinks(worldSize, pairs);
    expect(bestRingOrder(topology)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 9, 8]);
    expect(ringMetrics(topology, rankOrder(worldSize)).bottleneckMbps).toBe(1);
  });

  it(`beyond ${EXACT_RING_SEARCH_MAX_RANKS} ranks, misses a ring no greedy walk closes, as the reference does`, () => {
    // Ring 0-1-...-9-0 exists, but every walk takes the wide 0-5 chord and strands itself.
    const worldSize = EXACT_RING_SEARCH_MAX_RANKS + 1;
    const ring = rankOrder(worldSize).map((rank) => [rank, (rank + 1) % worldSize, 100, 64] as const);
    expectConfigurationError(() => bestRingOrder(symmetricLinks(worldSize, [...ring, [0, 5, 1000, 64]])), NO_RING);
  });

  it('finds a planted fast ring in a large world', () => {
    const ring = [0, 17, 4, 29, 11, 23, 2, 8, 31, 14, 5, 26, 19, 1, 12, 27, 6, 21, 9, 30, 3, 16, 24, 10, 28, 7, 18, 13, 25, 15, 22, 20];
    const topology = plantedRing(ring);
    expect(ringMetrics(topology, bestRingOrder(topology))).toEqual({
      bottleneckMbps: 4096,
      totalBandwidthMbps: 4096 * ring.length,
      latencyNs: 4096 * ring.length,
    });
  });

  describe('against a brute-force oracle', () => {
    const arbSmall = fc.oneof(
      arbRingTopology({ minRanks: 1, maxRanks: 7, sparse: true, aggregates: true }),
      arbRingTopology({ minRanks: 2, maxRanks: 7, symmetric: true }),
      arbRingTopology({ minRanks: 2, maxRanks: 7, sparse: true, symmetric: true }),
      arbRingTopology({ minRanks: 2, maxRanks: 7, metric: arbMetric }),
      arbRingTopology({
        minRanks: 2,
        maxRanks: 7,
        sparse: true,
        metric: fc.integer({ min: Number.MAX_SAFE_INTEGER - 3, max: Number.MAX_SAFE_INTEGER }),
      }),
    );

    it('bestRingOrder is the best closed ring, ties to the smallest order, for 1..7 ranks', () => {
      fc.assert(
        fc.property(arbSmall, (topology) => {
          expectSameAsOracle(() => bestRingOrder(topology), bruteForceRingOrder(topology));
        }),
        { numRuns: 300 },
      );
    });

    it('bestRingOrders picks edge-diverse rings as the reference, for 2..7 ranks', () => {
      fc.assert(
        fc.property(arbSmall, fc.integer({ min: 1, max: 8 }), (topology, maximum) => {
          fc.pre(topology.worldSize > 1);
          const rings = preferredRings(topology, closedRings(topology)).sort(lexicographic);
          expectSameAsOracle(() => bestRingOrders(topology, maximum), rings.length === 0 ? undefined : bruteForceRingOrders(topology, rings, maximum));
        }),
        { numRuns: 200 },
      );
    });

    it('on symmetric links, returns the reference canonical direction (second rank below the last)', () => {
      fc.assert(
        fc.property(arbRingTopology({ minRanks: 3, maxRanks: 12, symmetric: true, sparse: true }), (topology) => {
          let orders: number[][] = [];
          try {
            orders = bestRingOrders(topology, 4);
          } catch {
            return;
          }
          for (const order of orders) expect(order[1]).toBeLessThan(order[order.length - 1]!);
        }),
        { numRuns: 60 },
      );
    });

    it(`beyond ${EXACT_RING_SEARCH_MAX_RANKS} ranks, equals the greedy rings from every start, selected alike`, () => {
      const arbLarge = fc.oneof(
        arbRingTopology({ minRanks: EXACT_RING_SEARCH_MAX_RANKS + 1, maxRanks: EXACT_RING_SEARCH_MAX_RANKS + 4 }),
        arbRingTopology({ minRanks: EXACT_RING_SEARCH_MAX_RANKS + 1, maxRanks: EXACT_RING_SEARCH_MAX_RANKS + 4, symmetric: true, sparse: true }),
        arbRingTopology({ minRanks: EXACT_RING_SEARCH_MAX_RANKS + 1, maxRanks: EXACT_RING_SEARCH_MAX_RANKS + 4, metric: arbMetric, aggregates: true }),
      );
      fc.assert(
        fc.property(arbLarge, fc.integer({ min: 1, max: 6 }), (topology, maximum) => {
          expectSameAsOracle(() => bestRingOrders(topology, maximum), bruteForceGreedyRingOrders(topology, maximum));
        }),
        { numRuns: 40 },
      );
    });

    it('ringMetrics reports the oracle score of the best ring', () => {
      fc.assert(
        fc.property(arbRingTopology({ minRanks: 2, maxRanks: 7, metric: arbMetric }), (topology) => {
          const order = bestRingOrder(topology);
          const [bottleneck, totalBandwidth, totalLatency] = oracleScore(topology, order);
          expect(ringMetrics(topology, order)).toEqual({
            bottleneckMbps: Number(bottleneck),
            totalBandwidthMbps: Number(totalBandwidth),
            latencyNs: Number(totalLatency),
          });
        }),
        { numRuns: 60 },
      );
    });
  });

  it('does not depend on the order the links were added in', () => {
    const arbReordered = arbRingTopology({ minRanks: 3, maxRanks: 12, sparse: true, aggregates: true }).chain((topology) =>
      fc.record({
        topology: fc.constant(topology),
        links: fc.shuffledSubarray([...topology.links], { minLength: topology.links.length, maxLength: topology.links.length }),
      }),
    );
    fc.assert(
      fc.property(arbReordered, ({ topology, links }) => {
        const reordered = new CollectiveTopology({ worldSize: topology.worldSize, links });
        const orders = (of: CollectiveTopology) => {
          try {
            return bestRingOrders(of, 3);
          } catch (error) {
            return (error as Error).message;
          }
        };
        expect(orders(reordered)).toEqual(orders(topology));
      }),
      { numRuns: 40 },
    );
  });
});
