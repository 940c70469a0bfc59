/**
 * The autotune profile (GX1_COLLECTIVE_AUTOTUNE_PROFILE, the reference's version 2): its checks in
 * the reference's order with its texts, the fingerprints' recipe, and how measurements become
 * entries. `rxccl tune` end to end: spec/cli/tune.spec.ts.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAutotuneProfile, executionFingerprint, type FingerprintInput, pinnedTopology, readAutotuneProfile, topologyFingerprint, validateAutotuneProfile } from '../../lib/collectives/autotune-profile.js';
import { resolveTuning } from '../../lib/collectives/tuning.js';
import { fnv1a64OfU64s } from '../../lib/protocol/fnv1a.js';
import { CollectiveTopology } from '../../lib/topology/collective-topology.js';
import { formatTopologyLinks, parseTopologyLinks } from '../../lib/topology/ring-tuning.js';
import { rejection, startCoordinator } from '../helpers/job.js';
import { refusal } from '../helpers/refusal.js';

const input: FingerprintInput = { topology: CollectiveTopology.uniform(2), ringOrder: [0, 1], groups: null, directBandwidthMbps: 32000, directLatencyNs: 1000, rails: 1, railOrder: null };
const job = { worldSize: 2, transport: 'tcp_peer' as const, plane: 'native' as const, ringChannels: 1, fingerprint: input };
const entry = { operation: 'allreduce', min_payload_bytes: 0, max_payload_bytes: 100, algorithm: 'ring', ring_channels: 1, measured_time_ns: 5 };
const profile = (changes: Record<string, unknown> = {}, entries: Record<string, unknown>[] = [entry]) => ({
  version: 2,
  world_size: 2,
  topology_fingerprint: topologyFingerprint(input),
  execution_fingerprint: executionFingerprint('tcp_peer', 'native'),
  entries,
  ...changes,
});
const check = (value: unknown, against = job) => refusal(() => validateAutotuneProfile(value, against));

const directory = mkdtempSync(join(tmpdir(), 'rxccl-profile-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('the autotune profile', () => {
  it('fingerprints: the reference recipe over the topology, ring, groups, direct figures and rails, stable as hex', () => {
    const uniform = topologyFingerprint(input);
    expect(uniform).toMatch(/^[0-9a-f]{16}$/);
    // Each input counts.
    expect(topologyFingerprint({ ...input, groups: [[0], [1]] })).not.toBe(uniform);
    expect(topologyFingerprint({ ...input, ringOrder: [1, 0] })).not.toBe(uniform);
    expect(topologyFingerprint({ ...input, directLatencyNs: 999 })).not.toBe(uniform);
    expect(topologyFingerprint({ ...input, rails: 2 })).not.toBe(uniform);
    expect(topologyFingerprint({ ...input, topology: CollectiveTopology.uniform(2).withRailLinks(2, [], [{ source: 0, destination: 1, bandwidthMbps: 9 }]) })).not.toBe(uniform);
    // An identity rail order is no rail order.
    expect(topologyFingerprint({ ...input, railOrder: [0] })).toBe(uniform);
    expect(executionFingerprint('tcp_peer', 'native')).not.toBe(executionFingerprint('tcp_host_staged', 'coordinator'));
    expect(executionFingerprint('tcp_peer', 'native')).not.toBe(executionFingerprint('tcp_peer', 'js'));
  });

  it('fingerprints: the worked values of docs/protocol.md 9.11, one ring hashed at every world size', () => {
    const uniform = (worldSize: number) => ({ ...input, topology: CollectiveTopology.uniform(worldSize), ringOrder: Array.from({ length: worldSize }, (_, rank) => rank) });
    expect(topologyFingerprint(input)).toBe('2ee759e114cc4dc5');
    expect(fnv1a64OfU64s([2, 0, 1, 1, 32000, 1000, 1, 2, 0, 1, 0, 32000, 1000]).toString(16).padStart(16, '0')).toBe('2ee759e114cc4dc5');
    expect(topologyFingerprint(uniform(3))).toBe('27ac3b292ea48f46');
    expect(topologyFingerprint(uniform(4))).toBe('0cc36cebbc867c2a');
    expect([executionFingerprint('tcp_peer', 'native'), executionFingerprint('tcp_peer', 'js'), executionFingerprint('tcp_host_staged', 'coordinator')]).toEqual(['16e5b1669502bdb2', '35e0786f9ff207d3', 'c7e79b9e81eda571']);
  });

  it('accepts its own job\'s profile (a 0x prefix and upper case too)', () => {
    expect(check(profile())).toBe('accepted');
    expect(check(profile({ topology_fingerprint: `0x${topologyFingerprint(input).toUpperCase()}` }))).toBe('accepted');
  });

  it('refuses what the reference refuses, in its order, with its texts', () => {
    const refused = (text: string) => `invalid collective autotune profile: ${text}`;
    expect(check(profile({ version: 1 }))).toBe(refused('unsupported version 1, expected 2'));
    expect(check(profile({ world_size: 3 }))).toBe(refused('world size 3 does not match configured world size 2'));
    expect(check(profile({ topology_fingerprint: '00' }))).toBe(refused(`topology fingerprint "00" does not match "${topologyFingerprint(input)}"`));
    expect(check(profile({ execution_fingerprint: executionFingerprint('tcp_host_staged', 'coordinator') }))).toBe(
      refused(`execution fingerprint "${executionFingerprint('tcp_host_staged', 'coordinator')}" does not match "${executionFingerprint('tcp_peer', 'native')}" for transport TcpPeer`),
    );
    expect(check(profile({}, []))).toBe(refused('profile contains no measurements'));
    expect(check(profile({}, [{ ...entry, min_payload_bytes: 200 }]))).toBe(refused('AllReduce range 200..=100 is reversed'));
    expect(check(profile({}, [{ ...entry, measured_time_ns: 0 }]))).toBe(refused('AllReduce range 0..=100 has zero measured time'));
    expect(check(profile({}, [{ ...entry, ring_channels: 65 }]))).toBe(refused('AllReduce range 0..=100 has invalid ring channel count 65'));
    expect(check(profile({}, [{ ...entry, operation: 'alltoall' }]))).toBe(refused('algorithm Ring cannot execute AllToAll'));
    expect(check(profile({}, [{ ...entry, algorithm: 'hierarchical' }]))).toBe(refused('hierarchical measurement requires configured topology groups'));
    // A row an earlier rxccl measured and this one no longer has: refused by name, with the fix.
    expect(check(profile({}, [{ ...entry, algorithm: 'exchange' }]))).toBe(
      refused('entries[0] field "algorithm" is "exchange": the JS plane\'s exchange rows were removed: its schedules carry their agreement on their own links now (docs/protocol.md 9.6.3); measure again with rxccl tune'),
    );
    expect(check(profile({}, [{ ...entry, ring_channels: 2 }]))).toBe(refused('AllReduce range 0..=100 was measured with 2 ring channels, this job has 1 (GX1_RING_CHANNELS)'));
    expect(check(profile({}, [entry, { ...entry, min_payload_bytes: 100, max_payload_bytes: 200 }]))).toBe(refused('AllReduce ranges 0..=100 and 100..=200 overlap'));
    expect(check(profile({}, [{ ...entry, algorithm: 'warp' }]))).toMatch(/^invalid collective autotune profile: entries\[0\] field "algorithm" must be direct, ring, /);
  });

  it('reads a file, naming one it cannot read or parse', () => {
    const broken = join(directory, 'broken.json');
    writeFileSync(broken, '{ nope');
    expect(refusal(() => readAutotuneProfile(join(directory, 'none.json')))).toMatch(/^cannot read collective autotune profile ".*none\.json": ENOENT/);
    expect(refusal(() => readAutotuneProfile(broken))).toMatch(/^invalid collective autotune profile: .*broken\.json is not valid JSON: /);
  });

  it('opens only a regular file, checked before a byte is read: a FIFO is refused at once, never waited on', () => {
    const fifo = join(directory, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(refusal(() => readAutotuneProfile(fifo))).toBe(`cannot read collective autotune profile ${JSON.stringify(fifo)}: it is a FIFO, not a regular file`);
    expect(refusal(() => readAutotuneProfile(directory))).toBe(`cannot read collective autotune profile ${JSON.stringify(directory)}: it is a directory, not a regular file`);
    expect(refusal(() => readAutotuneProfile('/dev/null'))).toBe('cannot read collective autotune profile "/dev/null": it is a character device, not a regular file');
  });

  it('refuses a file holding JSON that is not an object (null is not "no profile")', () => {
    for (const [text, what] of [['null', 'null'], ['[]', 'an array'], ['7', 'number'], ['"x"', 'string']]) {
      const file = join(directory, `not-object-${what}.json`);
      writeFileSync(file, text);
      expect(refusal(() => readAutotuneProfile(file))).toBe(`invalid collective autotune profile: ${file} must hold a JSON object, not ${what}`);
    }
  });

  it('a session names the setting that gave the profile: the option, or GX1_COLLECTIVE_AUTOTUNE_PROFILE', async () => {
    const file = join(directory, 'null.json');
    writeFileSync(file, 'null');
    const job = await startCoordinator(1);
    try {
      const error = await rejection(job.openRank(0, { autotuneProfile: file }));
      expect(error.code).toBe('INVALID_CONFIGURATION');
      expect(error.message).toBe(`autotuneProfile: invalid collective autotune profile: ${file} must hold a JSON object, not null`);
    } finally {
      await job.dispose();
    }
    expect(resolveTuning({}, 2, { GX1_COLLECTIVE_AUTOTUNE_PROFILE: file }).autotuneProfile).toEqual({ path: file, setting: 'GX1_COLLECTIVE_AUTOTUNE_PROFILE' });
    expect(resolveTuning({ autotuneProfile: file }, 2, { GX1_COLLECTIVE_AUTOTUNE_PROFILE: 'other' }).autotuneProfile).toEqual({ path: file, setting: 'autotuneProfile' });
  });

  it('accepts a 20,000-entry profile (the overlap check sorts, it does not compare every pair)', () => {
    const entries = Array.from({ length: 20_000 }, (_, index) => ({ ...entry, min_payload_bytes: index * 10, max_payload_bytes: index * 10 + 9 }));
    expect(check(profile({}, entries))).toBe('accepted');
    // Listed out of order, and one overlap among them all: found, named in the file's order.
    const shuffled = [...entries].reverse();
    expect(check(profile({}, [...shuffled, { ...entry, min_payload_bytes: 99_995, max_payload_bytes: 100_000 }]))).toBe(
      'invalid collective autotune profile: AllReduce ranges 99990..=99999 and 99995..=100000 overlap',
    );
  });

  it('refuses exactly the profiles with two overlapping ranges of one operation, naming a pair that does (against every pair compared)', () => {
    const range = fc.record({
      operation: fc.constantFrom('allreduce', 'allgather'),
      min_payload_bytes: fc.nat(60),
      width: fc.nat(12),
    });
    fc.assert(
      fc.property(fc.array(range, { minLength: 1, maxLength: 24 }), (ranges) => {
        const entries = ranges.map(({ operation, min_payload_bytes, width }) => ({ ...entry, operation, min_payload_bytes, max_payload_bytes: min_payload_bytes + width }));
        const overlapping = entries.some((first, index) =>
          entries.some((second, other) => other > index && first.operation === second.operation && second.min_payload_bytes <= first.max_payload_bytes && first.min_payload_bytes <= second.max_payload_bytes),
        );
        const result = check(profile({}, entries));
        if (!overlapping) return result === 'accepted';
        const named = /^invalid collective autotune profile: (AllReduce|AllGather) ranges (\d+)\.\.=(\d+) and (\d+)\.\.=(\d+) overlap$/.exec(result);
        if (named === null) return false;
        const [a, b, c, d] = named.slice(2).map(Number) as [number, number, number, number];
        const operation = named[1] === 'AllReduce' ? 'allreduce' : 'allgather';
        const listed = (min: number, max: number) => entries.findIndex((listedEntry) => listedEntry.operation === operation && listedEntry.min_payload_bytes === min && listedEntry.max_payload_bytes === max);
        return c <= b && a <= d && listed(a, b) !== -1 && listed(c, d) !== -1;
      }),
      { numRuns: 500 },
    );
  });

  it('turns the choices, one per size, into entries each covering the sizes nearest it', () => {
    const tuned = { worldSize: 2, ringChannels: 1, fingerprints: { topology: topologyFingerprint(input), execution: executionFingerprint('tcp_peer', 'native') } };
    const built = buildAutotuneProfile(
      [
        { operation: 'allreduce', bytes: 1 << 20, algorithm: 'staged', timeNs: 4e6 },
        { operation: 'allreduce', bytes: 8, algorithm: 'pairwise', timeNs: 50_000 },
      ],
      tuned,
    );
    expect(built.entries).toEqual([
      { operation: 'allreduce', min_payload_bytes: 0, max_payload_bytes: 2896, algorithm: 'pairwise', ring_channels: 1, measured_time_ns: 50_000 },
      { operation: 'allreduce', min_payload_bytes: 2897, max_payload_bytes: 1 << 20, algorithm: 'direct', ring_channels: 1, measured_time_ns: 4e6 },
    ]);
    expect(check(JSON.parse(JSON.stringify(built)))).toBe('accepted');
    // Deciding between algorithms is tune-decision.ts's: two choices at one size are refused.
    const twice = [
      { operation: 'allreduce', bytes: 8, algorithm: 'pairwise', timeNs: 50_000 },
      { operation: 'allreduce', bytes: 8, algorithm: 'staged', timeNs: 90_000 },
    ] as const;
    expect(refusal(() => buildAutotuneProfile(twice, tuned))).toBe('two choices for allreduce at 8 bytes: decide one per size first (decideAlgorithm)');
  });

  it('pins probed links to the profile\'s detected ones where every link is within 4x, and only there', () => {
    const probed = parseTopologyLinks(3, '0-1:256:4096,1-2:64:65536,0-2:64:65536');
    const raw = (links: unknown) => ({ ...profile(), detected_topology_links: links });
    const pinned = pinnedTopology(raw('0-1:1024:1024,1-2:16:65536,0-2:64:262144'), probed);
    expect(pinned === null ? null : formatTopologyLinks(pinned)).toBe('0-1:1024:1024,0-2:64:262144,1-2:16:65536');
    // 16x away, a link missing, no detected links, not links at all: the probe stands.
    expect(pinnedTopology(raw('0-1:4096:4096,1-2:64:65536,0-2:64:65536'), probed)).toBeNull();
    expect(pinnedTopology(raw('0-1:256:4096,1-2:64:65536'), probed)).toBeNull();
    expect(pinnedTopology(raw(null), probed)).toBeNull();
    expect(pinnedTopology(raw('junk'), probed)).toBeNull();
    expect(check(raw(7))).toBe('invalid collective autotune profile: detected_topology_links must be a string or null');
    expect(check(raw('garbage'))).toBe('invalid collective autotune profile: detected_topology_links "garbage" are not topology links of world size 2: invalid GX1_TOPOLOGY_LINKS value "garbage"');
    expect(check(raw('0-5:1:1'))).toBe('invalid collective autotune profile: detected_topology_links "0-5:1:1" are not topology links of world size 2: topology rank 5 is outside world size 2');
    expect(check(raw('0-1:1:1'))).toBe('accepted');
  });
});
