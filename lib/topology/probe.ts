import { ConfigurationError } from '../errors.js';
import { MAX_U64 } from '../protocol/constants.js';
import type { Links } from '../transport/links/links.js';
import { type ProbeStream, receiveAndAcknowledge, sendDelivered } from './acknowledged-delivery.js';
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
  /** Carries the probe's messages and the receivers' acknowledgements of them. */
  readonly links: Links;
  /** Collective: every rank's `bytes`, indexed by rank. */
  allGather(bytes: Uint8Array): Promise<readonly Uint8Array[]>;
  /** Collective: resolves once every rank has entered. */
  barrier(): Promise<void>;
  /** A monotonic clock in nanoseconds (`process.hrtime.bigint` in production). */
  now(): bigint;
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
const ACKNOWLEDGEMENT_KIND = 3;
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

/**
 * A stream of one kind of message on one rail and direction of a pair. Every kind's messages are
 * acknowledged under the one acknowledgement tag of that rail and direction: a sender never has
 * two messages unacknowledged, and every phase ends at a barrier with all of them received, so
 * an acknowledgement can only ever answer the message it was sent for.
 */
function probeStream(pair: ProbePair, rail: number, direction: number, kind: number): ProbeStream {
  return {
    rail,
    tag: topologyProbeTag(pair.first, pair.second, rail, direction, kind),
    acknowledgementTag: topologyProbeTag(pair.first, pair.second, rail, direction, ACKNOWLEDGEMENT_KIND),
  };
}

/**
 * Delivers `bytes` to `receiver` `warmup + timed` times, one after another, and returns how long
 * each timed delivery took: from the first byte sent to the receiver's acknowledgement of them.
 */
async function timeDeliveries(
  probe: ProbeContext,
  stream: ProbeStream,
  receiver: number,
  bytes: Uint8Array,
  warmup: number,
  timed: number,
): Promise<bigint[]> {
  for (let iteration = 0; iteration < warmup; iteration += 1) {
    await sendDelivered(probe.links, stream, receiver, bytes);
  }
  const samples: bigint[] = [];
  for (let iteration = 0; iteration < timed; iteration += 1) {
    const started = probe.now();
    await sendDelivered(probe.links, stream, receiver, bytes);
    samples.push(elapsedSince(probe, started));
  }
  return samples;
}

/** The receiving side of `timeDeliveries`: `count` messages of `byteCount` bytes, each acknowledged. */
async function acknowledgeEach(
  probe: ProbeContext,
  stream: ProbeStream,
  sender: number,
  byteCount: number,
  count: number,
): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    await receiveAndAcknowledge(probe.links, stream, sender, byteCount);
  }
}

/**
 * Times one direction of one rail as the reference does, on delivered bytes: warm-up, then
 * `latencyIterations` one-byte messages and `bandwidthIterations` payloads, each timed from the
 * send to the receiver's acknowledgement, medians of each. The latency is half the median
 * one-byte round trip (rounded up). A payload's time holds the same two trips (its first byte
 * out, the acknowledgement back) besides the transfer, so twice the latency comes off before it
 * becomes a bandwidth. Only the sender returns a measurement; every rank ends at the barrier, so
 * the next direction starts on a quiet network.
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
  const latency = probeStream(pair, rail, direction, LATENCY_KIND);
  const bandwidth = probeStream(pair, rail, direction, BANDWIDTH_KIND);
  const { warmupIterations, latencyIterations, bandwidthIterations, payloadBytes } = options;
  let measured: LinkProbe | null = null;
  if (probe.links.rank === sender) {
    const latencySamples = await timeDeliveries(probe, latency, receiver, LATENCY_PAYLOAD, warmupIterations, latencyIterations);
    // One payload serves every send: the probe never writes to it and its contents are noise.
    const payload = new Uint8Array(payloadBytes).fill(0xa5);
    const bandwidthSamples = await timeDeliveries(probe, bandwidth, receiver, payload, warmupIterations, bandwidthIterations);
    const latencyNs = (median(latencySamples) + 1n) / 2n;
    const elapsedNs = median(bandwidthSamples);
    const twiceLatency = latencyNs * 2n;
    const transferNs = elapsedNs > twiceLatency ? elapsedNs - twiceLatency : 1n;
    measured = {
      bandwidthMbps: megabytesPerSecond(BigInt(payloadBytes), transferNs),
      latencyNs: latencyNs < 1n ? 1n : latencyNs,
    };
  } else if (probe.links.rank === receiver) {
    await acknowledgeEach(probe, latency, sender, LATENCY_PAYLOAD.length, warmupIterations + latencyIterations);
    await acknowledgeEach(probe, bandwidth, sender, payloadBytes, warmupIterations + bandwidthIterations);
  }
  await probe.barrier();
  return measured;
}

/**
 * Times payloads on every rail at once, one direction: the rate multi-rail striping actually
 * gets, which may be far below the sum of the rails when they share a bottleneck (one NIC, one
 * loopback). A sample runs from the first byte sent to the last rail's acknowledgement; the
 * receiver takes every rail at once, so each rail is acknowledged as soon as its payload is in.
 * Only the sender returns a measurement.
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
  const streams = Array.from({ length: probe.links.rails }, (_, rail) =>
    probeStream(pair, rail, direction, CONCURRENT_KIND),
  );
  let measured: bigint | null = null;
  if (probe.links.rank === sender) {
    const payload = new Uint8Array(options.payloadBytes).fill(0x5a);
    const bandwidthSamples: bigint[] = [];
    for (let sample = 0; sample < samples; sample += 1) {
      const started = probe.now();
      await Promise.all(streams.map((stream) => sendDelivered(probe.links, stream, receiver, payload)));
      const elapsedNs = elapsedSince(probe, started);
      if (sample >= options.warmupIterations) bandwidthSamples.push(elapsedNs);
    }
    const totalBytes = BigInt(options.payloadBytes) * BigInt(streams.length);
    measured = megabytesPerSecond(totalBytes, median(bandwidthSamples));
  } else if (probe.links.rank === receiver) {
    for (let sample = 0; sample < samples; sample += 1) {
      await Promise.all(
        streams.map((stream) => receiveAndAcknowledge(probe.links, stream, sender, options.payloadBytes)),
      );
    }
  }
  await probe.barrier();
  return measured;
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
 * As in the reference, what is timed is delivery: the receiver answers every probe message with
 * an empty acknowledgement on the same rail (tag kind 3), and the sender's timer stops when that
 * acknowledgement arrives, never when its own write completes. A socket takes a write into its
 * buffer at memory speed, so timing writes measured the sending host, not the link, and hosts
 * with different buffers reported different figures for the same network. Latency is half the
 * one-byte round trip; a payload is timed from its first byte sent to the acknowledgement of its
 * last, less that round trip; a concurrent-rail sample lasts until every rail is acknowledged.
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
