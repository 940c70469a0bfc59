import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';
import { MAX_U64 } from '../../lib/protocol/index.js';
import {
  conservativeBandwidthBucket,
  conservativeLatencyBucket,
  median,
  TOPOLOGY_PROBE_TAG_PREFIX,
  topologyProbeTag,
} from '../../lib/topology/index.js';

describe('conservative probe buckets', () => {
  it('use stable conservative buckets (the reference test)', () => {
    expect(conservativeBandwidthBucket(1)).toBe(1);
    expect(conservativeBandwidthBucket(63)).toBe(16);
    expect(conservativeBandwidthBucket(64)).toBe(64);
    expect(conservativeBandwidthBucket(255)).toBe(64);
    expect(conservativeBandwidthBucket(256)).toBe(256);
    expect(conservativeLatencyBucket(1)).toBe(4);
    expect(conservativeLatencyBucket(32_769)).toBe(65_536);
    expect(conservativeLatencyBucket(65_535)).toBe(65_536);
    expect(conservativeLatencyBucket(65_536)).toBe(262_144);
  });

  it('match the reference on 64-bit values (vectors printed by the Rust functions)', () => {
    const vectors: [bigint, bigint, bigint][] = [
      [0n, 1n, 4n],
      [3n, 1n, 4n],
      [4n, 4n, 16n],
      [1023n, 256n, 1024n],
      [4096n, 4096n, 16384n],
      [(1n << 53n) + 1n, 4503599627370496n, 18014398509481984n],
      [(1n << 62n) - 1n, 1152921504606846976n, 4611686018427387904n],
      [1n << 62n, 4611686018427387904n, MAX_U64],
      [0x7fff_ffff_ffff_ffffn, 4611686018427387904n, MAX_U64],
      [MAX_U64, 4611686018427387904n, MAX_U64],
    ];
    for (const [value, bandwidth, latency] of vectors) {
      expect(conservativeBandwidthBucket(value)).toBe(bandwidth);
      expect(conservativeLatencyBucket(value)).toBe(latency);
    }
  });

  it('never report a link better than measured, and bucket within a factor of four', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: MAX_U64 }), (value) => {
        const bandwidth = conservativeBandwidthBucket(value);
        expect(bandwidth <= value && value < bandwidth * 4n).toBe(true);
        const latency = conservativeLatencyBucket(value);
        // Strictly above the measurement, unless saturated at u64::MAX.
        if (latency === MAX_U64) expect(value >= 1n << 62n).toBe(true);
        else expect(latency > value && latency <= value * 16n).toBe(true);
      }),
    );
  });

  it('give numbers for numbers and bigints for bigints, agreeing', () => {
    fc.assert(
      fc.property(fc.nat(), (value) => {
        expect(conservativeBandwidthBucket(value)).toBe(Number(conservativeBandwidthBucket(BigInt(value))));
        expect(conservativeLatencyBucket(value)).toBe(Number(conservativeLatencyBucket(BigInt(value))));
      }),
    );
  });

  it('reject values outside u64', () => {
    for (const value of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => conservativeBandwidthBucket(value)).toThrow(ConfigurationError);
    }
    expect(() => conservativeLatencyBucket(MAX_U64 + 1n)).toThrow(/not an unsigned 64-bit integer/);
  });
});

describe('median', () => {
  it('takes the upper median without touching its input', () => {
    const samples = [5n, 1n, 4n, 2n];
    expect(median(samples)).toBe(4n);
    expect(samples).toEqual([5n, 1n, 4n, 2n]);
    expect(median([3, 1, 2])).toBe(2);
    expect(median([7])).toBe(7);
  });

  it('is the element at length/2 of the sorted samples', () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: 0n, max: MAX_U64 }), { minLength: 1 }), (samples) => {
        const sorted = [...samples].sort((left, right) => (left < right ? -1 : left > right ? 1 : 0));
        expect(median(samples)).toBe(sorted[Math.floor(samples.length / 2)]);
      }),
    );
  });

  it('refuses zero samples', () => {
    expect(() => median([])).toThrow(ConfigurationError);
  });
});

describe('topologyProbeTag', () => {
  it('matches the reference FNV-1a tags (vectors printed by the Rust function)', () => {
    expect(topologyProbeTag(0, 1, 0, 0, 0)).toBe(0x475a0bd62058f8b4n);
    expect(topologyProbeTag(0, 1, 0, 1, 1)).toBe(0x475a5a95287ec6d4n);
    expect(topologyProbeTag(2, 3, 1, 0, 2)).toBe(0x475a9facdf29fe77n);
    expect(topologyProbeTag(7, 12, 63, 1, 2)).toBe(0x475a7be410c9fe72n);
    expect(topologyProbeTag(0xffff_ffff, 0xffff_fffe, 5, 1, 0)).toBe(0x475af9c941bd1cc8n);
  });

  it('always carries the probe prefix and fits in 64 bits', () => {
    fc.assert(
      fc.property(fc.nat(64), fc.nat(64), fc.nat(63), fc.nat(1), fc.nat(3), (first, second, rail, direction, kind) => {
        const tag = topologyProbeTag(first, second, rail, direction, kind);
        expect(tag >> 48n).toBe(TOPOLOGY_PROBE_TAG_PREFIX >> 48n);
        expect(tag <= MAX_U64).toBe(true);
      }),
    );
  });

  it('gives every stream of a small world its own tag', () => {
    const tags = new Set<bigint>();
    let streams = 0;
    for (let first = 0; first < 16; first += 1) {
      for (let second = first + 1; second < 16; second += 1) {
        for (let rail = 0; rail < 4; rail += 1) {
          for (let direction = 0; direction < 2; direction += 1) {
            for (let kind = 0; kind < 4; kind += 1) {
              tags.add(topologyProbeTag(first, second, rail, direction, kind));
              streams += 1;
            }
          }
        }
      }
    }
    expect(tags.size).toBe(streams);
  });

  it('rejects fields that would wrap', () => {
    expect(() => topologyProbeTag(-1, 1, 0, 0, 0)).toThrow(/first rank -1/);
    expect(() => topologyProbeTag(0, 2 ** 32, 0, 0, 0)).toThrow(/second rank/);
    expect(() => topologyProbeTag(0, 1, 0.5, 0, 0)).toThrow(/rail/);
  });
});
