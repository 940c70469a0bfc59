import { describe, expect, it } from 'vitest';
import {
  parseAlgorithmPolicy,
  parseByteCount,
  parseRingOrder,
  parseTopologyLinks,
  validateRingChannels,
  validateRingOrder,
} from '../../lib/topology/index.js';
import { expectConfigurationError } from './expect-configuration-error.js';

describe('parseAlgorithmPolicy', () => {
  it('reads each policy, trimmed, in any ASCII case', () => {
    expect(parseAlgorithmPolicy('auto')).toBe('auto');
    expect(parseAlgorithmPolicy(' Direct\n')).toBe('direct');
    expect(parseAlgorithmPolicy('RING')).toBe('ring');
    expect(parseAlgorithmPolicy('\u00a0hierarchical\u0085')).toBe('hierarchical');
  });

  it('rejects anything else, quoting the value as given and naming the variable', () => {
    expectConfigurationError(() => parseAlgorithmPolicy('fast'), 'invalid GX1_COLLECTIVE_ALGORITHM value "fast"');
    expectConfigurationError(() => parseAlgorithmPolicy(' pairwise '), 'invalid GX1_COLLECTIVE_ALGORITHM value " pairwise "');
    expectConfigurationError(() => parseAlgorithmPolicy(''), 'invalid GX1_COLLECTIVE_ALGORITHM value ""');
    expectConfigurationError(() => parseAlgorithmPolicy('x', 'MY_POLICY'), 'invalid MY_POLICY value "x"');
  });

  it('folds ASCII letters only and trims what Rust trims', () => {
    // U+212A (Kelvin sign) lowercases to "k" in JavaScript, not in Rust's to_ascii_lowercase.
    expectConfigurationError(() => parseAlgorithmPolicy('\u212Aauto'), `invalid GX1_COLLECTIVE_ALGORITHM value ${JSON.stringify('\u212Aauto')}`);
    // A byte order mark is no whitespace to Rust.
    expectConfigurationError(() => parseAlgorithmPolicy('\ufeffring'), `invalid GX1_COLLECTIVE_ALGORITHM value ${JSON.stringify('\ufeffring')}`);
  });
});

describe('validateRingOrder', () => {
  it('returns a copy of a permutation of the ranks', () => {
    const order = [0, 2, 1, 3];
    const validated = validateRingOrder(4, order);
    expect(validated).toEqual(order);
    expect(validated).not.toBe(order);
    expect(validateRingOrder(1, [0])).toEqual([0]);
  });

  it('reports the length first, then the first rank out of range or repeated', () => {
    expectConfigurationError(() => validateRingOrder(4, [0, 1, 2]), 'invalid collective ring: contains 3 ranks, expected 4');
    expectConfigurationError(() => validateRingOrder(4, [0, 1, 2, 2, 5]), 'invalid collective ring: contains 5 ranks, expected 4');
    expectConfigurationError(() => validateRingOrder(4, [0, 2, 2, 5]), 'invalid collective ring: rank 2 appears more than once');
    expectConfigurationError(() => validateRingOrder(4, [0, 5, 2, 2]), 'topology rank 5 is outside world size 4');
    expectConfigurationError(() => validateRingOrder(2, [0, 0]), 'invalid collective ring: rank 0 appears more than once');
    expectConfigurationError(() => validateRingOrder(2, [0, -1]), 'topology rank -1 is outside world size 2');
    expectConfigurationError(() => validateRingOrder(2, [0, 0.5]), 'topology rank 0.5 is outside world size 2');
  });

  it('rejects an empty world', () => {
    expectConfigurationError(() => validateRingOrder(0, []), 'collective topology cannot be empty');
    expectConfigurationError(() => validateRingOrder(1.5, [0]), 'collective world size 1.5 is not a rank count');
  });
});

describe('parseRingOrder', () => {
  it('reads comma-separated ranks, each trimmed, a leading + and zeros allowed', () => {
    expect(parseRingOrder(4, '0,2,1,3')).toEqual([0, 2, 1, 3]);
    expect(parseRingOrder(4, ' 3 , +0,\t01 ,2')).toEqual([3, 0, 1, 2]);
    expect(parseRingOrder(1, '0')).toEqual([0]);
  });

  it('rejects text that is no list of unsigned integers, quoting the whole value', () => {
    for (const value of ['', '0,1,', '0;1', '0,-1', '0,1.0', '0,x', '0,+', '0,4294967296']) {
      expectConfigurationError(() => parseRingOrder(2, value), `invalid GX1_RING_ORDER value ${JSON.stringify(value)}`);
    }
  });

  it('validates the ring it read', () => {
    expectConfigurationError(() => parseRingOrder(4, '0,1,2'), 'invalid collective ring: contains 3 ranks, expected 4');
    expectConfigurationError(() => parseRingOrder(4, '0,2,2,1'), 'invalid collective ring: rank 2 appears more than once');
    expectConfigurationError(() => parseRingOrder(4, '0,5,2,1'), 'topology rank 5 is outside world size 4');
    // A u32 rank beyond the world is a range error, not a parse error.
    expectConfigurationError(() => parseRingOrder(2, '0,4294967295'), 'topology rank 4294967295 is outside world size 2');
  });
});

describe('parseTopologyLinks', () => {
  it('builds symmetric links in the units of our topology, skipping blank entries', () => {
    const topology = parseTopologyLinks(3, ' 0-1:100000:500 ,, 2 - 1 : 25000 : 900 ,');
    expect(topology.worldSize).toBe(3);
    expect(topology.rails).toBe(1);
    expect(topology.links).toEqual([
      { source: 0, destination: 1, bandwidthMbps: 100_000, latencyNs: 500 },
      { source: 1, destination: 0, bandwidthMbps: 100_000, latencyNs: 500 },
      { source: 1, destination: 2, bandwidthMbps: 25_000, latencyNs: 900 },
      { source: 2, destination: 1, bandwidthMbps: 25_000, latencyNs: 900 },
    ]);
    expect(topology.railLinks).toEqual([]);
    expect(topology.aggregateLinks).toEqual([]);
    expect(parseTopologyLinks(2, '').links).toEqual([]);
  });

  it('lets a later entry for a pair, in either order, replace an earlier one', () => {
    const topology = parseTopologyLinks(2, '0-1:100:5,1-0:200:7');
    expect(topology.links).toEqual([
      { source: 0, destination: 1, bandwidthMbps: 200, latencyNs: 7 },
      { source: 1, destination: 0, bandwidthMbps: 200, latencyNs: 7 },
    ]);
  });

  it('floors a declared zero latency to 1 ns, the least our topology holds', () => {
    expect(parseTopologyLinks(2, '0-1:100:0').link(1, 0)).toEqual({ source: 1, destination: 0, bandwidthMbps: 100, latencyNs: 1 });
  });

  it('rejects malformed entries, quoting the whole value', () => {
    for (const value of [
      '0-1',
      '0-1:100',
      '01:100:5',
      '0-1:100:5:6',
      '0-x:100:5',
      '0-1:-100:5',
      '0-1:100:5.5',
      '0-4294967296:1:1',
      '0-1:9007199254740992:1',
    ]) {
      expectConfigurationError(() => parseTopologyLinks(2, value), `invalid GX1_TOPOLOGY_LINKS value ${JSON.stringify(value)}`);
    }
  });

  it('rejects ranks outside the world, self links and zero bandwidth, in that order', () => {
    expectConfigurationError(() => parseTopologyLinks(4, '0-1:1:1,5-5:0:1'), 'topology rank 5 is outside world size 4');
    expectConfigurationError(() => parseTopologyLinks(4, '0-4:1:1'), 'topology rank 4 is outside world size 4');
    expectConfigurationError(() => parseTopologyLinks(4, '1-1:0:1'), 'topology rank 1 links to itself');
    expectConfigurationError(() => parseTopologyLinks(4, '0-1:0:1'), 'topology link 0-1 has zero bandwidth');
    expectConfigurationError(() => parseTopologyLinks(0, ''), 'collective topology cannot be empty');
  });
});

describe('parseByteCount', () => {
  it('reads an unsigned decimal integer, a leading + allowed', () => {
    expect(parseByteCount('GX1_RING_THRESHOLD_BYTES', '262144')).toBe(262_144);
    expect(parseByteCount('GX1_RING_THRESHOLD_BYTES', '+0')).toBe(0);
    expect(parseByteCount('GX1_RING_THRESHOLD_BYTES', '9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('rejects whitespace, signs, fractions and values a number cannot hold exactly, naming the variable', () => {
    for (const value of ['', ' 1', '1 ', '-1', '1e3', '1.0', '0x10', '9007199254740992']) {
      expectConfigurationError(() => parseByteCount('GX1_RING_CHANNELS', value), `invalid GX1_RING_CHANNELS value ${JSON.stringify(value)}`);
    }
  });
});

describe('validateRingChannels', () => {
  it('accepts 1..=64', () => {
    expect(validateRingChannels(1)).toBe(1);
    expect(validateRingChannels(64)).toBe(64);
  });

  it('rejects the rest with the reference message', () => {
    expectConfigurationError(() => validateRingChannels(0), 'invalid collective ring channel count 0; expected 1..=64');
    expectConfigurationError(() => validateRingChannels(65), 'invalid collective ring channel count 65; expected 1..=64');
    expectConfigurationError(() => validateRingChannels(1.5), 'invalid collective ring channel count 1.5; expected 1..=64');
  });
});
