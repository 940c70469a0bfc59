/**
 * GX1_TOPOLOGY_GROUPS and GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES as the reference reads them (its
 * syntax, checks in its order, its texts), and GX1_TOPOLOGY_GROUPS=auto: the groups of fast links.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refusal } from '../helpers/refusal.js';
import { inferTopologyGroups } from '../../lib/collectives/infer-groups.js';
import { resolveTuning } from '../../lib/collectives/tuning.js';
import { parseTopologyLinks } from '../../lib/topology/ring-tuning.js';
import { groupsText, parseTopologyGroups } from '../../lib/topology/topology-groups.js';
import { arbTopologyGroups } from '../../lib/testing/index.js';

describe('GX1_TOPOLOGY_GROUPS', () => {
  it('reads groups by ";" and ranks by ",", each rank trimmed, blank ranks skipped, in the order given', () => {
    expect(parseTopologyGroups(4, '0,1;2,3')).toEqual([[0, 1], [2, 3]]);
    expect(parseTopologyGroups(4, ' 3 , 1 ,; +2,0,')).toEqual([[3, 1], [2, 0]]);
    expect(parseTopologyGroups(4, ' AUTO ')).toBe('auto');
    expect(parseTopologyGroups(4, 'Auto')).toBe('auto');
  });

  it('refuses what the reference refuses, in its order, with its texts', () => {
    const groups = (value: string, worldSize = 4) => refusal(() => parseTopologyGroups(worldSize, value));
    expect(groups('0,1;2,x')).toBe('invalid GX1_TOPOLOGY_GROUPS value "0,1;2,x"');
    expect(groups('0,1;2,-3')).toBe('invalid GX1_TOPOLOGY_GROUPS value "0,1;2,-3"');
    expect(groups('0,1,2,3')).toBe('invalid collective hierarchy: requires at least two non-empty groups');
    expect(groups('')).toBe('invalid collective hierarchy: requires at least two non-empty groups');
    expect(groups('0,1;;2,3')).toBe('invalid collective hierarchy: group 1 is empty');
    expect(groups('0,1;2,3;')).toBe('invalid collective hierarchy: group 2 is empty');
    expect(groups('0,1;1,2,3')).toBe('invalid collective hierarchy: rank 1 appears more than once');
    expect(groups('0,4;1,2,3')).toBe('topology rank 4 is outside world size 4');
    expect(groups('0;1', 4)).toBe('invalid collective hierarchy: does not cover ranks [2,3]');
    // The first offence in the reference's order wins: range before a repeat, both before coverage.
    expect(groups('0,0;9')).toBe('invalid collective hierarchy: rank 0 appears more than once');
    expect(groups('0,9;0')).toBe('topology rank 9 is outside world size 4');
  });

  it('hierarchical needs groups; the payload bytes are read only for auto, and are above zero', () => {
    expect(refusal(() => resolveTuning({ algorithm: 'hierarchical' }, 4, {}))).toBe(
      'invalid collective hierarchy: GX1_COLLECTIVE_ALGORITHM=hierarchical requires explicit or inferred topology groups',
    );
    expect(resolveTuning({}, 4, { GX1_COLLECTIVE_ALGORITHM: 'hierarchical', GX1_TOPOLOGY_GROUPS: '0,1;2,3', GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES: 'junk' })).toMatchObject({
      algorithm: 'hierarchical',
      groups: [[0, 1], [2, 3]],
    });
    expect(resolveTuning({ topologyGroups: [[1, 0], [3, 2]] }, 4, {}).groups).toEqual([[1, 0], [3, 2]]);
    const auto = { GX1_TOPOLOGY_GROUPS: 'auto', GX1_TOPOLOGY_LINKS: 'probe' };
    expect(refusal(() => resolveTuning({}, 4, { ...auto, GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES: '00' }))).toBe('invalid GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES value "0"');
    expect(refusal(() => resolveTuning({}, 4, { ...auto, GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES: ' 5' }))).toBe('invalid GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES value " 5"');
    expect(resolveTuning({}, 4, { ...auto, GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES: '+4096' }).groupPayloadBytes).toBe(4096);
    expect(refusal(() => resolveTuning({ groupPayloadBytes: 0 }, 4, auto))).toBe('invalid groupPayloadBytes value "0"');
    expect(refusal(() => resolveTuning({}, 4, { GX1_TOPOLOGY_GROUPS: 'auto', GX1_TOPOLOGY_LINKS: '0-1:100:1', GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES: '0' }))).toBe(
      'invalid GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES value "0"',
    );
  });

  it('writes back what it reads (any partition, any listing)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 16 }).chain((worldSize) => fc.tuple(fc.constant(worldSize), arbTopologyGroups(worldSize, 2))),
        ([worldSize, groups]) => {
          expect(parseTopologyGroups(worldSize, groupsText(groups))).toEqual(groups);
        },
      ),
    );
  });
});

describe('GX1_TOPOLOGY_GROUPS=auto (inferTopologyGroups)', () => {
  /** Hosts of `perHost` ranks: 20 GB/s inside, `between` MB/s across. */
  const hosts = (worldSize: number, hostOf: (rank: number) => number, between = 119) => {
    const links: string[] = [];
    for (let a = 0; a < worldSize; a++) {
      for (let b = a + 1; b < worldSize; b++) links.push(hostOf(a) === hostOf(b) ? `${a}-${b}:20000:5000` : `${a}-${b}:${between}:60000`);
    }
    return parseTopologyLinks(worldSize, links.join(','));
  };

  it('finds the hosts: 2 x 2, 3 x 2, interleaved ranks, uneven hosts', () => {
    expect(inferTopologyGroups(hosts(4, (rank) => (rank < 2 ? 0 : 1)), 16 << 20)).toEqual([[0, 1], [2, 3]]);
    expect(inferTopologyGroups(hosts(6, (rank) => Math.floor(rank / 2)), 16 << 20)).toEqual([[0, 1], [2, 3], [4, 5]]);
    expect(inferTopologyGroups(hosts(4, (rank) => rank % 2), 16 << 20)).toEqual([[0, 2], [1, 3]]);
    expect(inferTopologyGroups(hosts(5, (rank) => (rank < 3 ? 0 : 1)), 16 << 20)).toEqual([[0, 1, 2], [3, 4]]);
  });

  it('resolves from declared links at once (else when the session opens); refuses a uniform topology with the reference text', () => {
    const declared = hosts(4, (rank) => (rank < 2 ? 0 : 1));
    const links = declared.links.filter((link) => link.source < link.destination).map((link) => `${link.source}-${link.destination}:${link.bandwidthMbps}:${link.latencyNs}`).join(',');
    expect(resolveTuning({}, 4, { GX1_TOPOLOGY_GROUPS: 'auto', GX1_TOPOLOGY_LINKS: links }).groups).toEqual([[0, 1], [2, 3]]);
    expect(resolveTuning({}, 4, { GX1_TOPOLOGY_GROUPS: 'auto', GX1_TOPOLOGY_LINKS: 'probe' }).groups).toBe('auto');
    const uniform = '0-1:100:10,0-2:100:10,0-3:100:10,1-2:100:10,1-3:100:10,2-3:100:10';
    expect(refusal(() => resolveTuning({}, 4, { GX1_TOPOLOGY_GROUPS: 'auto', GX1_TOPOLOGY_LINKS: uniform }))).toBe(
      'GX1_TOPOLOGY_GROUPS: invalid collective hierarchy: automatic grouping found no distinct fast-link domains',
    );
    expect(resolveTuning({}, 4, { GX1_TOPOLOGY_GROUPS: 'auto' }).groups).toBe('auto');
  });
});
