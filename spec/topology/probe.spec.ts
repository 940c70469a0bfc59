import { map } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';
import {
  bestRingOrder,
  CollectiveTopology,
  type CollectiveTopologyJson,
  probeTopology,
  type ProbeContext,
  type TopologyProbeOptions,
  topologyProbeTag,
} from '../../lib/topology/index.js';
import { FakeProbeFabric, type MessageCost } from './fake-probe-links.js';

const WARMUP_SPIKE_NS = 10_000_000n;
const OUTLIER_NS = 5_000_000n;

/**
 * Rail 0 runs at 3000 MB/s, rail 1 at `rail1Mbps`. Sending up the ranks (source < destination)
 * costs 20 us per message on rail 0 and 150 us on rail 1; sending down costs 40 us on both. The
 * first message of every stream pays a warm-up spike, the sixth an outlier.
 */
function linkCost(rail1Mbps = 12_000n): MessageCost {
  return (source, destination, rail, bytes, index) => {
    const up = source < destination;
    const latencyNs = rail === 0 ? (up ? 20_000n : 40_000n) : up ? 150_000n : 40_000n;
    const bandwidthMbps = rail === 0 ? 3_000n : rail1Mbps;
    const spike = index === 0 ? WARMUP_SPIKE_NS : index === 5 ? OUTLIER_NS : 0n;
    return latencyNs + (BigInt(bytes) * 1000n) / bandwidthMbps + spike;
  };
}

/** Runs the probe on every rank of a fake world at once. */
async function probeWorld(
  fabric: FakeProbeFabric,
  options: Partial<TopologyProbeOptions> = {},
  wrap: (links: ProbeContext) => ProbeContext = (links) => links,
): Promise<CollectiveTopology[]> {
  return Promise.all(
    Array.from({ length: fabric.worldSize }, (_, rank) => probeTopology(wrap(fabric.links(rank)), options)),
  );
}

interface ExpectedPair {
  readonly rails: readonly { bandwidthMbps: number; latencyNs: number }[];
  readonly link: { bandwidthMbps: number; latencyNs: number };
  readonly aggregateMbps?: number;
}

/** The topology where every rank pair measures `pair`, in both directions. */
function uniformTopology(worldSize: number, pair: ExpectedPair): CollectiveTopologyJson {
  const json: CollectiveTopologyJson = {
    worldSize,
    rails: pair.rails.length,
    links: [],
    railLinks: [],
    aggregateLinks: [],
  };
  for (let source = 0; source < worldSize; source += 1) {
    for (let destination = 0; destination < worldSize; destination += 1) {
      if (source === destination) continue;
      json.links.push({ source, destination, ...pair.link });
      pair.rails.forEach((metrics, rail) => json.railLinks.push({ source, destination, rail, ...metrics }));
      if (pair.aggregateMbps !== undefined) {
        json.aggregateLinks.push({ source, destination, bandwidthMbps: pair.aggregateMbps });
      }
    }
  }
  return json;
}

/*
 * Expected buckets, by hand, for the default options (1 MiB, 16 latency, 3 bandwidth, 1 warm-up).
 * Every sample runs from the send to the receiver's empty acknowledgement, which travels back at
 * the other direction's latency:
 *
 * rail 0 up:   1-byte round trip 20000 + 40000 ns -> latency (60000+1)/2 = 30000; 1 MiB
 *              20000 + 349525 + 40000 ns, less 2*30000 -> 349525 ns -> 1048576000/349525 = 3000 MB/s
 * rail 0 down: round trip 40000 + 20000, the same 30000 and 3000 MB/s
 *              => bandwidth bucket(3000) = 1024, latency bucket(30000) = 65536
 * rail 1 up:   round trip 150000 + 40000 -> 95000; 150000 + 87381 + 40000 - 190000 -> 12000 MB/s
 * rail 1 down: round trip 40000 + 150000, the same 95000 and 12000 MB/s
 *              => bandwidth bucket(12000) = 4096, latency bucket(95000) = 262144
 * link:        slowest rail 1024 MB/s, highest latency 262144 ns
 * aggregate:   up, the last acknowledgement comes at max(20000 + 349525 + 40000,
 *              150000 + 87381 + 40000) = 409525 ns for 2 MiB -> 5120 MB/s; down the same
 *              (40000 + 349525 + 20000); bucket(5120) = 4096, under the rail sum 5120
 */
const RAIL_0 = { bandwidthMbps: 1024, latencyNs: 65_536 };
const RAIL_1 = { bandwidthMbps: 4096, latencyNs: 262_144 };

describe('probeTopology over an in-memory world', () => {
  for (const worldSize of [1, 2, 3, 4]) {
    it(`measures exact buckets on ${worldSize} rank(s), one rail, identical on every rank`, async () => {
      const fabric = new FakeProbeFabric(worldSize, 1, linkCost());
      const topologies = await probeWorld(fabric);
      const expected = uniformTopology(worldSize, { rails: [RAIL_0], link: RAIL_0 });
      for (const topology of topologies) expect(topology.toJSON()).toEqual(expected);
      expect(topologies.every((topology) => topology.isComplete())).toBe(true);
      expect(fabric.undelivered()).toEqual([]);
    });

    it(`measures exact buckets on ${worldSize} rank(s), two rails, identical on every rank`, async () => {
      const fabric = new FakeProbeFabric(worldSize, 2, linkCost());
      const topologies = await probeWorld(fabric);
      const expected = uniformTopology(worldSize, {
        rails: [RAIL_0, RAIL_1],
        link: { bandwidthMbps: 1024, latencyNs: 262_144 },
        aggregateMbps: worldSize > 1 ? 4096 : undefined,
      });
      for (const topology of topologies) expect(topology.toJSON()).toEqual(expected);
      const orders = topologies.map((topology) => bestRingOrder(topology));
      for (const order of orders) expect(order).toEqual(orders[0]);
      expect(fabric.undelivered()).toEqual([]);
    });
  }

  it('caps the aggregate at the sum of the rail buckets', async () => {
    // Both rails as rail 0: each buckets to 1024, together they measure 5120 -> 4096 > 2048.
    const railZero = linkCost();
    const fabric = new FakeProbeFabric(2, 2, (source, destination, _rail, bytes, index) =>
      railZero(source, destination, 0, bytes, index),
    );
    const [topology] = await probeWorld(fabric);
    expect(topology!.aggregateLink(0, 1)?.bandwidthMbps).toBe(2048);
    expect(topology!.aggregateLink(1, 0)?.bandwidthMbps).toBe(2048);
    expect(topology!.railLink(1, 0, 1)?.bandwidthMbps).toBe(1024);
  });

  it('keeps warm-up sends out of the measurement', async () => {
    const options = { bandwidthIterations: 1 };
    const [warmed] = await probeWorld(new FakeProbeFabric(2, 1, linkCost()), { ...options, warmupIterations: 1 });
    const [cold] = await probeWorld(new FakeProbeFabric(2, 1, linkCost()), { ...options, warmupIterations: 0 });
    expect(warmed!.link(0, 1)?.bandwidthMbps).toBe(1024);
    // 10 ms of warm-up spike in the only 1 MiB sample, less the 60000 ns round trip:
    // 1048576000 / 10349525 = 101 -> 64.
    expect(cold!.link(0, 1)?.bandwidthMbps).toBe(64);
  });

  it('sends what the options ask for, each message acknowledged on its rail, on probe-prefixed tags', async () => {
    const fabric = new FakeProbeFabric(2, 2, linkCost());
    const options = { payloadBytes: 4096, latencyIterations: 3, bandwidthIterations: 2, warmupIterations: 1 };
    await probeWorld(fabric, options);
    const expected = new Map<string, number>();
    for (const rail of [0, 1]) {
      for (const [direction, sender, receiver] of [[0, 0, 1], [1, 1, 0]] as const) {
        const stream = (source: number, destination: number, kind: number) =>
          `${rail}:${source}->${destination}#${topologyProbeTag(0, 1, rail, direction, kind)}`;
        expected.set(stream(sender, receiver, 0), 1 + 3);
        expected.set(stream(sender, receiver, 1), 1 + 2);
        expected.set(stream(sender, receiver, 2), 1 + 2);
        // Every latency, bandwidth and concurrent-rail message comes back as one acknowledgement.
        expected.set(stream(receiver, sender, 3), 4 + 3 + 3);
      }
    }
    const counted = new Map<string, number>();
    for (const key of fabric.sent) counted.set(key, (counted.get(key) ?? 0) + 1);
    expect(counted).toEqual(expected);
    for (const key of fabric.sent) expect(BigInt(key.split('#')[1]!) >> 48n).toBe(0x475an);
  });

  it('times delivered bytes: a transport that takes writes at once is measured at its delivery rate', async () => {
    // 16384 ns each way, 1024 MB/s (1 MiB in 1024000 ns). Round trip 16384 + 16384 -> latency
    // 16384, exactly the edge of bucket 65536; 1 MiB 16384 + 1024000 + 16384 - 32768 -> exactly
    // 1024 MB/s, the edge of bucket 1024: one nanosecond more or less would change either bucket.
    // Concurrent: 2 MiB acknowledged after 1056768 ns -> 1984 MB/s -> 1024.
    const delivery: MessageCost = (_source, _destination, _rail, bytes) => 16_384n + (BigInt(bytes) * 1000n) / 1024n;
    const link = { bandwidthMbps: 1024, latencyNs: 65_536 };
    const expected = uniformTopology(2, { rails: [link, link], link, aggregateMbps: 1024 });
    const instantWrites: MessageCost = () => 0n;
    for (const write of [instantWrites, delivery]) {
      const fabric = new FakeProbeFabric(2, 2, delivery, write);
      for (const topology of await probeWorld(fabric)) expect(topology.toJSON()).toEqual(expected);
      expect(fabric.undelivered()).toEqual([]);
    }
  });

  it('yields positive metrics even from a clock that never ticks', async () => {
    const fabric = new FakeProbeFabric(2, 2, () => 0n);
    const [topology] = await probeWorld(fabric, { payloadBytes: 1 });
    // Every sample reads as 1 ns: latency (1+1)/2 = 1 -> 4; 1 byte in 1 ns = 1000 MB/s -> 256.
    expect(topology!.link(0, 1)).toEqual({ source: 0, destination: 1, bandwidthMbps: 256, latencyNs: 4 });
  });

  it('validates options and the rank before sending anything', async () => {
    const fabric = new FakeProbeFabric(2, 1, linkCost());
    await expect(probeTopology(fabric.links(0), { latencyIterations: 0 })).rejects.toThrow(ConfigurationError);
    await expect(probeTopology({ ...fabric.links(0), links: { ...fabric.links(0).links, rank: 2 } })).rejects.toThrow(
      'rank 2 is outside topology probe world size 2',
    );
    await expect(probeTopology({ ...fabric.links(0), links: { ...fabric.links(0).links, rails: 0 } })).rejects.toThrow(
      'topology probe rail count 0 must be a positive integer',
    );
    expect(fabric.sent).toEqual([]);
  });

  it('fails on every rank when the gathered metrics are short', async () => {
    const fabric = new FakeProbeFabric(2, 1, linkCost());
    const results = await Promise.allSettled(
      [0, 1].map((rank) => {
        const links = fabric.links(rank);
        return probeTopology(
          { ...links, allGather: async (bytes) => (await links.allGather(bytes)).map((part) => part.subarray(8)) },
          { payloadBytes: 64, latencyIterations: 1, bandwidthIterations: 1, warmupIterations: 0 },
        );
      }),
    );
    for (const result of results) {
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason.message).toBe('topology probe gathered 6 metrics, expected 8');
    }
  });

  it('fails when a transport delivers the wrong number of bytes', async () => {
    const fabric = new FakeProbeFabric(2, 1, linkCost());
    const receiver = fabric.links(1);
    // Rank 0 is left waiting at the barrier: in a session the failure would abort it.
    void probeTopology(fabric.links(0), { payloadBytes: 64 });
    await expect(
      probeTopology(
        { ...receiver, links: { ...receiver.links, receive: (...args) => receiver.links.receive(...args).pipe(map((bytes) => bytes.subarray(1))) } },
        { payloadBytes: 64 },
      ),
    ).rejects.toThrow('topology probe from rank 0 on rail 0 received 0 bytes, expected 1');
  });
});
