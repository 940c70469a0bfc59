import { describe, expect, it } from 'vitest';
import { formatTopology } from '../../lib/cli/format-topology.js';
import { CollectiveTopology } from '../../lib/topology/collective-topology.js';

const pairs = (worldSize: number) =>
  Array.from({ length: worldSize }, (_, source) => Array.from({ length: worldSize }, (_, destination) => ({ source, destination }))).flat().filter(({ source, destination }) => source !== destination);

describe('formatTopology', () => {
  it('lists every directed link and the ring order', () => {
    const topology = new CollectiveTopology({
      worldSize: 3,
      links: pairs(3).map((pair) => ({ ...pair, latencyNs: 16_384, bandwidthMbps: pair.source + pair.destination === 3 ? 256 : 4096 })),
    });
    expect(formatTopology(topology)).toBe(
      [
        'topology of 3 ranks, 1 rail (measured figures are power-of-four buckets)',
        'link    latency  bandwidth',
        '0 -> 1  16.4 us  4096 MB/s',
        '0 -> 2  16.4 us  4096 MB/s',
        '1 -> 0  16.4 us  4096 MB/s',
        '1 -> 2  16.4 us  256 MB/s',
        '2 -> 0  16.4 us  4096 MB/s',
        '2 -> 1  16.4 us  256 MB/s',
        'best ring order: 0 -> 1 -> 2 -> 0 (bottleneck 256 MB/s, ring latency 49.2 us)',
        '',
      ].join('\n'),
    );
  });

  it('adds a column per rail and one for all rails at once', () => {
    const topology = new CollectiveTopology({
      worldSize: 2,
      rails: 2,
      links: pairs(2).map((pair) => ({ ...pair, latencyNs: 65_536, bandwidthMbps: 1024 })),
      railLinks: pairs(2).flatMap((pair) => [0, 1].map((rail) => ({ ...pair, rail, latencyNs: 65_536, bandwidthMbps: 1024 }))),
      aggregateLinks: pairs(2).map((pair) => ({ ...pair, bandwidthMbps: 2048 })),
    });
    const lines = formatTopology(topology).split('\n');
    expect(lines[1]).toBe('link    latency  bandwidth  rail 0     rail 1     all rails');
    expect(lines[2]).toBe('0 -> 1  65.5 us  1024 MB/s  1024 MB/s  1024 MB/s  2048 MB/s');
  });
});
