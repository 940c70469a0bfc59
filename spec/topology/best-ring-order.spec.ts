import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';
import {
  bestRingOrder,
  CollectiveTopology,
  EXACT_RING_SEARCH_MAX_RANKS,
  ringMetrics,
  type TopologyLink,
} from '../../lib/topology/index.js';
import { arbCompleteTopology, arbMetric } from './arbitraries.js';

function rankOrder(worldSize: number): number[] {
  return Array.from({ length: worldSize }, (_, rank) => rank);
}

/** Every order of ranks 1..n-1 after rank 0, in lexicographic order. */
function* ordersFromZero(worldSize: number): Generator<number[]> {
  const extend = function* (prefix: number[], rest: number[]): Generator<number[]> {
    if (rest.length === 0) yield prefix;
    for (const [index, rank] of rest.entries()) {
      yield* extend([...prefix, rank], rest.filter((_, other) => other !== index));
    }
  };
  yield* extend([0], rankOrder(worldSize).slice(1));
}

/** The specification, by brute force: widest bottleneck, then least latency, then first in order. */
function bruteForceRingOrder(topology: CollectiveTopology): number[] {
  let best: number[] | undefined;
  let bestMetrics = { bottleneckMbps: -1, latencyNs: 0 };
  for (const order of ordersFromZero(topology.worldSize)) {
    const metrics = ringMetrics(topology, order);
    if (
      best === undefined ||
      metrics.bottleneckMbps > bestMetrics.bottleneckMbps ||
      (metrics.bottleneckMbps === bestMetrics.bottleneckMbps && metrics.latencyNs < bestMetrics.latencyNs)
    ) {
      best = order;
      bestMetrics = metrics;
    }
  }
  return best!;
}

/** A complete symmetric topology where `ring` has fast links and every other pair is slow. */
function plantedRing(ring: readonly number[]): CollectiveTopology {
  const fast = new Set<string>();
  ring.forEach((rank, index) => {
    const next = ring[(index + 1) % ring.length]!;
    fast.add(`${rank}-${next}`).add(`${next}-${rank}`);
  });
  const links: TopologyLink[] = [];
  for (const source of ring) {
    for (const destination of ring) {
      if (source === destination) continue;
      const isFast = fast.has(`${source}-${destination}`);
      links.push({ source, destination, bandwidthMbps: isFast ? 4096 : 16, latencyNs: isFast ? 4096 : 65536 });
    }
  }
  return new CollectiveTopology({ worldSize: ring.length, links });
}

describe('bestRingOrder', () => {
  it('needs no search below three ranks', () => {
    expect(bestRingOrder(new CollectiveTopology({ worldSize: 1 }))).toEqual([0]);
    expect(bestRingOrder(plantedRing([0, 1]))).toEqual([0, 1]);
    expect(ringMetrics(new CollectiveTopology({ worldSize: 1 }), [0])).toEqual({
      bottleneckMbps: Number.POSITIVE_INFINITY,
      latencyNs: 0,
    });
  });

  it('routes around a slow link', () => {
    // 0-2 and 1-3 are the fast cross links; rank order would use the slow 1-2 and 3-0.
    expect(bestRingOrder(plantedRing([0, 2, 1, 3]))).toEqual([0, 2, 1, 3]);
    expect(bestRingOrder(plantedRing([0, 5, 3, 1, 4, 2]))).toEqual([0, 2, 4, 1, 3, 5]);
  });

  it('breaks bottleneck ties by latency, then by the lexicographically smallest order', () => {
    const links: TopologyLink[] = [];
    for (let source = 0; source < 4; source += 1) {
      for (let destination = 0; destination < 4; destination += 1) {
        if (source === destination) continue;
        // Every edge equally wide; only the 1->3 and 3->2 edges are quick.
        const quick = (source === 1 && destination === 3) || (source === 3 && destination === 2);
        links.push({ source, destination, bandwidthMbps: 1024, latencyNs: quick ? 4 : 64 });
      }
    }
    expect(bestRingOrder(new CollectiveTopology({ worldSize: 4, links }))).toEqual([0, 1, 3, 2]);
    const uniform = links.map((link) => ({ ...link, latencyNs: 64 }));
    expect(bestRingOrder(new CollectiveTopology({ worldSize: 4, links: uniform }))).toEqual([0, 1, 2, 3]);
  });

  it('judges an edge by its concurrent-rail aggregate where there is one', () => {
    const links: TopologyLink[] = [];
    for (let source = 0; source < 3; source += 1) {
      for (let destination = 0; destination < 3; destination += 1) {
        if (source !== destination) links.push({ source, destination, bandwidthMbps: 1024, latencyNs: 64 });
      }
    }
    // Rank order 0->1->2->0 is slower than 0->2->1->0 once the aggregates of 0->2, 2->1, 1->0 count.
    const aggregateLinks = [
      { source: 0, destination: 2, bandwidthMbps: 4096 },
      { source: 2, destination: 1, bandwidthMbps: 4096 },
      { source: 1, destination: 0, bandwidthMbps: 4096 },
    ];
    const topology = new CollectiveTopology({ worldSize: 3, rails: 2, links, aggregateLinks });
    expect(bestRingOrder(topology)).toEqual([0, 2, 1]);
    expect(ringMetrics(topology, [0, 2, 1]).bottleneckMbps).toBe(4096);
    expect(ringMetrics(topology, [0, 1, 2]).bottleneckMbps).toBe(1024);
  });

  it('rejects an incomplete topology and a ring that is no permutation', () => {
    const incomplete = new CollectiveTopology({
      worldSize: 3,
      links: [{ source: 0, destination: 1, bandwidthMbps: 1, latencyNs: 1 }],
    });
    expect(() => bestRingOrder(incomplete)).toThrow(
      'best ring order needs a complete topology; link 0->2 is missing',
    );
    expect(() => ringMetrics(plantedRing([0, 1, 2]), [0, 1, 1])).toThrow(ConfigurationError);
  });

  it('returns a permutation starting at rank 0, never worse than rank order', () => {
    fc.assert(
      fc.property(arbCompleteTopology({ minRanks: 1, maxRanks: 14, aggregates: true }), (topology) => {
        const order = bestRingOrder(topology);
        expect(order[0]).toBe(0);
        expect([...order].sort((left, right) => left - right)).toEqual(rankOrder(topology.worldSize));
        const found = ringMetrics(topology, order);
        const baseline = ringMetrics(topology, rankOrder(topology.worldSize));
        expect(found.bottleneckMbps).toBeGreaterThanOrEqual(baseline.bottleneckMbps);
        if (found.bottleneckMbps === baseline.bottleneckMbps) {
          expect(found.latencyNs).toBeLessThanOrEqual(baseline.latencyNs);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('does not depend on the order the links were added in', () => {
    const arbReordered = arbCompleteTopology({ minRanks: 3, maxRanks: 12, aggregates: true }).chain((topology) =>
      fc.record({
        topology: fc.constant(topology),
        links: fc.shuffledSubarray([...topology.links], {
          minLength: topology.links.length,
          maxLength: topology.links.length,
        }),
        aggregateLinks: fc.shuffledSubarray([...topology.aggregateLinks], {
          minLength: topology.aggregateLinks.length,
          maxLength: topology.aggregateLinks.length,
        }),
      }),
    );
    fc.assert(
      fc.property(arbReordered, ({ topology, links, aggregateLinks }) => {
        const { worldSize, rails } = topology;
        const reordered = new CollectiveTopology({ worldSize, rails, links, aggregateLinks });
        expect(bestRingOrder(reordered)).toEqual(bestRingOrder(topology));
      }),
      { numRuns: 40 },
    );
  });

  it('equals the brute-force optimum for small worlds (coarse metrics: many ties)', () => {
    fc.assert(
      fc.property(arbCompleteTopology({ minRanks: 3, maxRanks: 7, aggregates: true }), (topology) => {
        expect(bestRingOrder(topology)).toEqual(bruteForceRingOrder(topology));
      }),
      { numRuns: 150 },
    );
  });

  it('equals the brute-force optimum for small worlds (wide metrics)', () => {
    fc.assert(
      fc.property(arbCompleteTopology({ minRanks: 3, maxRanks: 7, metric: arbMetric }), (topology) => {
        expect(bestRingOrder(topology)).toEqual(bruteForceRingOrder(topology));
      }),
      { numRuns: 100 },
    );
  });

  it(`searches ${EXACT_RING_SEARCH_MAX_RANKS} ranks exactly, quickly, even with nothing to prune`, () => {
    const worldSize = EXACT_RING_SEARCH_MAX_RANKS;
    const links: TopologyLink[] = [];
    for (let source = 0; source < worldSize; source += 1) {
      for (let destination = 0; destination < worldSize; destination += 1) {
        if (source !== destination) links.push({ source, destination, bandwidthMbps: 64, latencyNs: 64 });
      }
    }
    const uniform = new CollectiveTopology({ worldSize, links });
    bestRingOrder(uniform); // Time the search, not the JIT compiling it.
    const started = performance.now();
    expect(bestRingOrder(uniform)).toEqual(rankOrder(worldSize));
    expect(performance.now() - started).toBeLessThan(50);
    const ring = [0, 7, 3, 8, 1, 5, 2, 6, 4];
    expect(ringMetrics(plantedRing(ring), bestRingOrder(plantedRing(ring))).bottleneckMbps).toBe(4096);
  });

  it('beyond the exact range, returns an order no segment reversal improves (2-opt optimum)', () => {
    const arbLarge = arbCompleteTopology({
      minRanks: EXACT_RING_SEARCH_MAX_RANKS + 1,
      maxRanks: EXACT_RING_SEARCH_MAX_RANKS + 4,
      metric: fc.constantFrom(1, 4, 16, 64),
      aggregates: true,
    });
    fc.assert(
      fc.property(arbLarge, (topology) => {
        const order = bestRingOrder(topology);
        const found = ringMetrics(topology, order);
        for (let i = 1; i < order.length - 1; i += 1) {
          for (let j = i + 1; j < order.length; j += 1) {
            const moved = [...order.slice(0, i), ...order.slice(i, j + 1).reverse(), ...order.slice(j + 1)];
            const metrics = ringMetrics(topology, moved);
            const improves =
              metrics.bottleneckMbps > found.bottleneckMbps ||
              (metrics.bottleneckMbps === found.bottleneckMbps && metrics.latencyNs < found.latencyNs);
            expect(improves, `reversing ${i}..${j} of [${order.join(', ')}]`).toBe(false);
          }
        }
      }),
      { numRuns: 25 },
    );
  });

  it('finds a planted fast ring in a large world with the heuristic', () => {
    const ring = [0, 17, 4, 29, 11, 23, 2, 8, 31, 14, 5, 26, 19, 1, 12, 27, 6, 21, 9, 30, 3, 16, 24, 10, 28, 7, 18, 13, 25, 15, 22, 20];
    const topology = plantedRing(ring);
    const order = bestRingOrder(topology);
    expect(ringMetrics(topology, order)).toEqual({ bottleneckMbps: 4096, latencyNs: 4096 * ring.length });
  });
});
