import { ConfigurationError } from '../errors.js';
import { lastValueFrom } from 'rxjs';
import { MAX_U64 } from '../protocol/constants.js';
import { ElementType } from '../protocol/element-type.js';
import type { Links } from '../transport/links/links.js';
import {
  CollectiveTopology,
  type TopologyAggregateLink,
  type TopologyLink,
  type TopologyRailLink,
} from './collective-topology.js';
import {
  conservativeBandwidthBucket,
  conservativeLatencyBucket,
  median,
  topologyProbeTag,
} from './probe-buckets.js';
import { resolveProbeOptions, type TopologyProbeOptions } from './probe-options.js';

/**
 * What the probe needs from a rank: its links (the direct peer mesh in a session, an in-memory
 * fake in tests), two collectives and a clock. Every rank of the world calls `probeTopology`.
 */
export interface ProbeContext {
  /** Sends are timed until the transport took the bytes (written to the socket). */
  readonly links: Links;
  /** Collective: every rank's `bytes`, indexed by rank. */
  allGather(bytes: Uint8Array): Promise<readonly Uint8Array[]>;
  /** Collective: resolves once every rank has entered. */
  barrier(): Promise<void>;
  /** A monotonic clock in nanoseconds (`process.hrtime.bigint` in production). */
  now(): bigint;
}

function send(probe: ProbeContext, rail: number, destination: number, tag: bigint, bytes: Uint8Array): Promise<void> {
  return lastValueFrom(probe.links.send(rail, destination, tag, bytes, { elementType: ElementType.U8, count: bytes.length }), { defaultValue: undefined });
}

function receive(probe: ProbeContext, rail: number, source: number, tag: bigint, byteCount: number): Promise<Uint8Array> {
  return lastValueFrom(probe.links.receive(rail, source, tag, { elementType: ElementType.U8, count: byteCount }));
}

/** One direction of one rail, as its sender measured it. */
interface LinkProbe {
  readonly bandwidthMbps: bigint;
  readonly latencyNs: bigint;
}

/** The two ranks being probed, first < second; tags are derived from this ordered pair. */
interface ProbePair {
  readonly first: number;
  readonly second: number;
}

const LATENCY_KIND = 0;
const BANDWIDTH_KIND = 1;
const CONCURRENT_KIND = 2;
const FORWARD = 0;
const REVERSE = 1;

const LATENCY_PAYLOAD = new Uint8Array(1);

function saturate(value: bigint): bigint {
  return value > MAX_U64 ? MAX_U64 : value;
}

/** Nanoseconds since `started`, at least 1 (a coarse clock may not have ticked). */
function elapsedSince(probe: ProbeContext, started: bigint): bigint {
  const elapsed = probe.now() - started;
  return elapsed < 1n ? 1n : saturate(elapsed);
}

/** Bytes per microsecond, i.e. MB/s; at least 1, as the reference reports it. */
function megabytesPerSecond(bytes: bigint, nanoseconds: bigint): bigint {
  const rate = saturate((bytes * 1000n) / nanoseconds);
  return rate < 1n ? 1n : rate;
}

async function receiveExactly(
  probe: ProbeContext,
  rail: number,
  source: number,
  tag: bigint,
  byteCount: number,
): Promise<void> {
  const bytes = await receive(probe, rail, source, tag, byteCount);
  if (bytes.length !== byteCount) {
    throw new ConfigurationError(
      `topology probe from rank ${source} on rail ${rail} received ${bytes.length} bytes, expected ${byteCount}`,
    );
  }
}

/**
 * Times one direction of one rail: warm-up, then `latencyIterations` one-byte sends and
 * `bandwidthIterations` payload sends, medians of each. A send's time includes its fixed
 * per-message cost, so the latency (half the median one-byte time, rounded up) is taken off
 * twice before the payload time becomes a bandwidth. Only the sender returns a measurement;
 * every rank ends at the barrier, so the next direction starts on a quiet network.
 */
async function probeDirection(
  probe: ProbeContext,
  pair: ProbePair,
  sender: number,
  receiver: number,
  rail: number,
  direction: number,
  options: TopologyProbeOptions,
): Promise<LinkProbe | null> {
  const latencyTag = topologyProbeTag(pair.first, pair.second, rail, direction, LATENCY_KIND);
  const bandwidthTag = topologyProbeTag(pair.first, pair.second, rail, direction, BANDWIDTH_KIND);
  const latencySamples: bigint[] = [];
  const bandwidthSamples: bigint[] = [];
  if (probe.links.rank === sender) {
    for (let iteration = 0; iteration < options.warmupIterations; iteration += 1) {
      await send(probe, rail, receiver, latencyTag, LATENCY_PAYLOAD);
    }
    for (let iteration = 0; iteration < options.latencyIterations; iteration += 1) {
      const started = probe.now();
      await send(probe, rail, receiver, latencyTag, LATENCY_PAYLOAD);
      latencySamples.push(elapsedSince(probe, started));
    }
    // One payload serves every send: the probe never writes to it and its contents are noise.
    const payload = new Uint8Array(options.payloadBytes).fill(0xa5);
    for (let iteration = 0; iteration < options.warmupIterations; iteration += 1) {
      await send(probe, rail, receiver, bandwidthTag, payload);
    }
    for (let iteration = 0; iteration < options.bandwidthIterations; iteration += 1) {
      const started = probe.now();
      await send(probe, rail, receiver, bandwidthTag, payload);
      bandwidthSamples.push(elapsedSince(probe, started));
    }
  } else if (probe.links.rank === receiver) {
    for (let index = 0; index < options.warmupIterations + options.latencyIterations; index += 1) {
      await receiveExactly(probe, rail, sender, latencyTag, 1);
    }
    for (let index = 0; index < options.warmupIterations + options.bandwidthIterations; index += 1) {
      await receiveExactly(probe, rail, sender, bandwidthTag, options.payloadBytes);
    }
  }
  await probe.barrier();
  if (probe.links.rank !== sender) return null;
  const latencyNs = (median(latencySamples) + 1n) / 2n;
  const elapsedNs = median(bandwidthSamples);
  const twiceLatency = latencyNs * 2n;
  const transferNs = elapsedNs > twiceLatency ? elapsedNs - twiceLatency : 1n;
  return {
    bandwidthMbps: megabytesPerSecond(BigInt(options.payloadBytes), transferNs),
    latencyNs: latencyNs < 1n ? 1n : latencyNs,
  };
}

/**
 * Times payload sends on every rail at once, one direction: the rate multi-rail striping
 * actually gets, which may be far below the sum of the rails when they share a bottleneck
 * (one NIC, one loopback). Only the sender returns a measurement.
 */
async function probeConcurrentRailsDirection(
  probe: ProbeContext,
  pair: ProbePair,
  sender: number,
  receiver: number,
  direction: number,
  options: TopologyProbeOptions,
): Promise<bigint | null> {
  const samples = options.warmupIterations + options.bandwidthIterations;
  const bandwidthSamples: bigint[] = [];
  const rails = Array.from({ length: probe.links.rails }, (_, rail) => rail);
  const tags = rails.map((rail) =>
    topologyProbeTag(pair.first, pair.second, rail, direction, CONCURRENT_KIND),
  );
  if (probe.links.rank === sender) {
    const payload = new Uint8Array(options.payloadBytes).fill(0x5a);
    for (let sample = 0; sample < samples; sample += 1) {
      const started = probe.now();
      await Promise.all(rails.map((rail) => send(probe, rail, receiver, tags[rail]!, payload)));
      const elapsedNs = elapsedSince(probe, started);
      if (sample >= options.warmupIterations) bandwidthSamples.push(elapsedNs);
    }
  } else if (probe.links.rank === receiver) {
    for (let sample = 0; sample < samples; sample += 1) {
      for (const rail of rails) {
        await receiveExactly(probe, rail, sender, tags[rail]!, options.payloadBytes);
      }
    }
  }
  await probe.barrier();
  if (probe.links.rank !== sender) return null;
  const totalBytes = BigInt(options.payloadBytes) * BigInt(probe.links.rails);
  return megabytesPerSecond(totalBytes, median(bandwidthSamples));
}

/** Shares `local` (u64s) with every rank and returns all ranks' values, rank after rank. */
async function gatherMetrics(probe: ProbeContext, local: readonly bigint[], what: string): Promise<bigint[]> {
  const bytes = new Uint8Array(local.length * 8);
  const view = new DataView(bytes.buffer);
  local.forEach((value, index) => view.setBigUint64(index * 8, saturate(value), true));
  const gathered = await probe.allGather(bytes);
  const values: bigint[] = [];
  for (const part of gathered) {
    const partView = new DataView(part.buffer, part.byteOffset, part.byteLength);
    for (let offset = 0; offset + 8 <= part.byteLength; offset += 8) {
      values.push(partView.getBigUint64(offset, true));
    }
  }
  const expected = probe.links.worldSize * local.length;
  if (gathered.length !== probe.links.worldSize || values.length !== expected) {
    throw new ConfigurationError(`${what} gathered ${values.length} metrics, expected ${expected}`);
  }
  return values;
}

/** The same measurement recorded on both ordered pairs: probed links are symmetric. */
function bothDirections<T>(pair: ProbePair, make: (source: number, destination: number) => T): T[] {
  return [make(pair.first, pair.second), make(pair.second, pair.first)];
}

/**
 * Measures every link of the world and returns the same complete topology on every rank.
 *
 * Pairs are probed one at a time in a fixed order (first rank ascending, then second), every
 * rank stepping through the same sequence of barriers and gathers, so the sends and receives of
 * a pair always meet and nothing deadlocks. For each pair and rail both directions are timed by
 * their sender, then all ranks gather the results; the pair keeps the slower direction (lower
 * bandwidth, higher latency), rounded to conservative buckets, so every rank derives identical
 * numbers from identical inputs. A pair's link is its slowest rail; with more than one rail the
 * concurrent-rail aggregate is measured as well, capped by the sum of the rail buckets.
 *
 * Run it while the session carries no other traffic: concurrent transfers would skew the timings.
 */
export async function probeTopology(
  probe: ProbeContext,
  options: Partial<TopologyProbeOptions> = {},
): Promise<CollectiveTopology> {
  const resolved = resolveProbeOptions(options);
  const { rank, worldSize, rails } = probe.links;
  if (!Number.isInteger(worldSize) || worldSize < 1) {
    throw new ConfigurationError(`topology probe world size ${worldSize} must be a positive integer`);
  }
  if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize) {
    throw new ConfigurationError(`rank ${rank} is outside topology probe world size ${worldSize}`);
  }
  if (!Number.isInteger(rails) || rails < 1) {
    throw new ConfigurationError(`topology probe rail count ${rails} must be a positive integer`);
  }
  const topologyLinks: TopologyLink[] = [];
  const railLinks: TopologyRailLink[] = [];
  const aggregateLinks: TopologyAggregateLink[] = [];

  await probe.barrier();
  for (let first = 0; first < worldSize; first += 1) {
    for (let second = first + 1; second < worldSize; second += 1) {
      const pair = { first, second };
      let pairBandwidthMbps = MAX_U64;
      let pairLatencyNs = 0n;
      let railBandwidthSumMbps = 0n;
      for (let rail = 0; rail < rails; rail += 1) {
        const forward = await probeDirection(probe, pair, first, second, rail, FORWARD, resolved);
        const reverse = await probeDirection(probe, pair, second, first, rail, REVERSE, resolved);
        // Only each direction's sender holds its figures; the others contribute zeros.
        const local = [
          forward?.bandwidthMbps ?? 0n,
          forward?.latencyNs ?? 0n,
          reverse?.bandwidthMbps ?? 0n,
          reverse?.latencyNs ?? 0n,
        ];
        const values = await gatherMetrics(probe, local, 'topology probe');
        const forwardBandwidth = values[first * 4]!;
        const forwardLatency = values[first * 4 + 1]!;
        const reverseBandwidth = values[second * 4 + 2]!;
        const reverseLatency = values[second * 4 + 3]!;
        if (forwardBandwidth === 0n || reverseBandwidth === 0n) {
          throw new ConfigurationError(
            `topology probe for ranks ${first}-${second} rail ${rail} returned zero bandwidth`,
          );
        }
        const bandwidthMbps = conservativeBandwidthBucket(
          forwardBandwidth < reverseBandwidth ? forwardBandwidth : reverseBandwidth,
        );
        const latencyNs = conservativeLatencyBucket(
          forwardLatency > reverseLatency ? forwardLatency : reverseLatency,
        );
        railLinks.push(
          ...bothDirections(pair, (source, destination) => ({
            source,
            destination,
            rail,
            bandwidthMbps: Number(bandwidthMbps),
            latencyNs: Number(latencyNs),
          })),
        );
        if (bandwidthMbps < pairBandwidthMbps) pairBandwidthMbps = bandwidthMbps;
        if (latencyNs > pairLatencyNs) pairLatencyNs = latencyNs;
        railBandwidthSumMbps = saturate(railBandwidthSumMbps + bandwidthMbps);
      }
      if (rails > 1) {
        const forward = await probeConcurrentRailsDirection(probe, pair, first, second, FORWARD, resolved);
        const reverse = await probeConcurrentRailsDirection(probe, pair, second, first, REVERSE, resolved);
        const values = await gatherMetrics(
          probe,
          [forward ?? 0n, reverse ?? 0n],
          'topology aggregate probe',
        );
        const forwardBandwidth = values[first * 2]!;
        const reverseBandwidth = values[second * 2 + 1]!;
        if (forwardBandwidth === 0n || reverseBandwidth === 0n) {
          throw new ConfigurationError(
            `topology aggregate probe for ranks ${first}-${second} returned zero bandwidth`,
          );
        }
        const measured = conservativeBandwidthBucket(
          forwardBandwidth < reverseBandwidth ? forwardBandwidth : reverseBandwidth,
        );
        // Concurrency cannot beat the rails' own figures added up; anything above is noise.
        const capped = measured < railBandwidthSumMbps ? measured : railBandwidthSumMbps;
        aggregateLinks.push(
          ...bothDirections(pair, (source, destination) => ({
            source,
            destination,
            bandwidthMbps: Number(capped < 1n ? 1n : capped),
          })),
        );
      }
      topologyLinks.push(
        ...bothDirections(pair, (source, destination) => ({
          source,
          destination,
          bandwidthMbps: Number(pairBandwidthMbps),
          latencyNs: Number(pairLatencyNs),
        })),
      );
    }
  }
  return new CollectiveTopology({
    worldSize,
    rails,
    links: topologyLinks,
    railLinks,
    aggregateLinks,
  });
}
