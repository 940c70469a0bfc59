import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';
import { CollectiveTopology, type CollectiveTopologyInit } from '../../lib/topology/index.js';
import { arbTopology } from './arbitraries.js';
import { expectConfigurationError } from './expect-configuration-error.js';

const pair = (source: number, destination: number, bandwidthMbps = 1024, latencyNs = 4096) => ({
  source,
  destination,
  bandwidthMbps,
  latencyNs,
});

function rejects(init: CollectiveTopologyInit, message: string): void {
  expectConfigurationError(() => new CollectiveTopology(init), message);
}

describe('CollectiveTopology', () => {
  it('looks links up by ordered pair, rail and aggregate', () => {
    const topology = new CollectiveTopology({
      worldSize: 2,
      rails: 2,
      links: [pair(1, 0, 256), pair(0, 1, 1024)],
      railLinks: [{ ...pair(0, 1), rail: 1 }],
      aggregateLinks: [{ source: 0, destination: 1, bandwidthMbps: 2048 }],
    });
    expect(topology.link(0, 1)?.bandwidthMbps).toBe(1024);
    expect(topology.link(1, 0)?.bandwidthMbps).toBe(256);
    expect(topology.link(0, 0)).toBeUndefined();
    expect(topology.railLink(0, 1, 1)?.rail).toBe(1);
    expect(topology.railLink(0, 1, 0)).toBeUndefined();
    expect(topology.aggregateLink(0, 1)?.bandwidthMbps).toBe(2048);
    expect(topology.aggregateLink(1, 0)).toBeUndefined();
    // Canonical order, whatever order the links came in.
    expect(topology.links.map((link) => [link.source, link.destination])).toEqual([
      [0, 1],
      [1, 0],
    ]);
  });

  it('is complete when every ordered pair has a link', () => {
    expect(new CollectiveTopology({ worldSize: 1 }).isComplete()).toBe(true);
    expect(new CollectiveTopology({ worldSize: 2, links: [pair(0, 1)] }).isComplete()).toBe(false);
    expect(new CollectiveTopology({ worldSize: 2, links: [pair(0, 1), pair(1, 0)] }).isComplete()).toBe(true);
  });

  it('rejects bad worlds, ranks, rails, duplicates, self links and metrics, naming the link', () => {
    rejects({ worldSize: 0 }, 'collective topology world size 0 is outside 1..=4294967295');
    rejects({ worldSize: 2, rails: 0 }, 'collective topology rail count 0 must be a positive integer');
    rejects({ worldSize: 2, links: [pair(0, 2)] }, 'topology link 0->2 names destination rank 2 outside world size 2');
    rejects({ worldSize: 2, links: [pair(-1, 0)] }, 'topology link -1->0 names source rank -1 outside world size 2');
    rejects({ worldSize: 2, links: [pair(1, 1)] }, 'topology link 1->1 connects rank 1 to itself');
    rejects({ worldSize: 2, links: [pair(0, 1), pair(0, 1, 64)] }, 'topology link 0->1 is listed twice');
    rejects({ worldSize: 2, links: [pair(0, 1, 0)] }, 'topology link 0->1 bandwidth Mbps 0 must be a positive integer');
    rejects({ worldSize: 2, links: [pair(0, 1, 64, 1.5)] }, 'topology link 0->1 latency ns 1.5 must be a positive integer');
    rejects(
      { worldSize: 2, rails: 2, railLinks: [{ ...pair(0, 1), rail: 2 }] },
      'topology rail link 0->1 on rail 2 names a rail outside 0..2',
    );
    rejects(
      { worldSize: 2, rails: 2, railLinks: [{ ...pair(0, 1), rail: 1 }, { ...pair(0, 1), rail: 1 }] },
      'topology rail link 0->1 on rail 1 is listed twice',
    );
    rejects(
      { worldSize: 3, aggregateLinks: [{ source: 2, destination: 2, bandwidthMbps: 1 }] },
      'topology aggregate link 2->2 connects rank 2 to itself',
    );
    rejects(
      { worldSize: 3, aggregateLinks: [{ source: 2, destination: 0, bandwidthMbps: -4 }] },
      'topology aggregate link 2->0 bandwidth Mbps -4 must be a positive integer',
    );
  });

  it('is immutable, keeping only the known fields', () => {
    const link = { ...pair(0, 1), note: 'extra' };
    const topology = new CollectiveTopology({ worldSize: 2, links: [link] });
    link.bandwidthMbps = 1;
    expect(topology.link(0, 1)).toEqual(pair(0, 1));
    expect(Object.isFrozen(topology.links)).toBe(true);
    expect(Object.isFrozen(topology.links[0])).toBe(true);
  });

  it('round-trips through JSON text', () => {
    fc.assert(
      fc.property(arbTopology, (topology) => {
        const restored = CollectiveTopology.fromJSON(JSON.parse(JSON.stringify(topology)));
        expect(restored.toJSON()).toEqual(topology.toJSON());
        expect(restored.isComplete()).toBe(topology.isComplete());
      }),
    );
  });

  it('serialises identically whatever order the links were given in', () => {
    const shuffled = <T>(items: readonly T[]) =>
      fc.shuffledSubarray([...items], { minLength: items.length, maxLength: items.length });
    const arbReordered = arbTopology.chain((topology) =>
      fc.record({
        topology: fc.constant(topology),
        links: shuffled(topology.links),
        railLinks: shuffled(topology.railLinks),
        aggregateLinks: shuffled(topology.aggregateLinks),
      }),
    );
    fc.assert(
      fc.property(arbReordered, ({ topology, links, railLinks, aggregateLinks }) => {
        const { worldSize, rails } = topology;
        const reordered = new CollectiveTopology({ worldSize, rails, links, railLinks, aggregateLinks });
        expect(JSON.stringify(reordered)).toBe(JSON.stringify(topology));
      }),
    );
  });

  it('reads hand-written JSON, with defaults, and rejects ill-typed JSON', () => {
    const topology = CollectiveTopology.fromJSON({ worldSize: 2, links: [pair(0, 1), pair(1, 0)] });
    expect(topology.rails).toBe(1);
    expect(topology.isComplete()).toBe(true);
    expect(() => CollectiveTopology.fromJSON(null)).toThrow('collective topology JSON must be an object');
    expect(() => CollectiveTopology.fromJSON({ worldSize: '2' })).toThrow(
      'collective topology JSON field "worldSize" must be a number, got "2"',
    );
    expect(() => CollectiveTopology.fromJSON({ worldSize: 2, links: {} })).toThrow(
      'collective topology JSON field "links" must be an array',
    );
    expect(() =>
      CollectiveTopology.fromJSON({ worldSize: 2, railLinks: [{ ...pair(0, 1) }] }),
    ).toThrow('collective topology JSON railLinks[0] field "rail" must be a number, got undefined');
    expect(() => CollectiveTopology.fromJSON({ worldSize: 2, links: [pair(0, 5)] })).toThrow(ConfigurationError);
  });
});
