import { ConfigurationError } from '../errors.js';
import { CollectiveTopology, type TopologyLink } from './collective-topology.js';
import { invalidEnvironment, MAX_U32, parseUnsigned, rankOutOfRange, trimWhitespace } from './environment-values.js';

/**
 * The reference's collective tuning values as they arrive in environment variables
 * (GX1_COLLECTIVE_ALGORITHM, GX1_RING_ORDER, GX1_TOPOLOGY_LINKS, byte counts such as
 * GX1_RING_THRESHOLD_BYTES, GX1_RING_CHANNELS). Each parser accepts exactly what the reference
 * accepts and fails with the reference's message, so a job configured for one runs on the other.
 */

/** Which collective algorithm family a job asks for; `auto` lets the planner choose. */
export type AlgorithmPolicy = 'auto' | 'direct' | 'ring' | 'hierarchical' | 'tree';

const ALGORITHM_POLICIES: readonly AlgorithmPolicy[] = ['auto', 'direct', 'ring', 'hierarchical', 'tree'];

/** The reference caps ring channels (GX1_RING_CHANNELS) at this many. */
const MAX_RING_CHANNELS = 64;

function checkWorldSize(worldSize: number): void {
  if (worldSize === 0) throw new ConfigurationError('collective topology cannot be empty');
  if (!Number.isInteger(worldSize) || worldSize < 0) {
    throw new ConfigurationError(`collective world size ${worldSize} is not a rank count`);
  }
}

/** Reads GX1_COLLECTIVE_ALGORITHM (or `name`): one of the policies, trimmed, any ASCII case. */
export function parseAlgorithmPolicy(value: string, name = 'GX1_COLLECTIVE_ALGORITHM'): AlgorithmPolicy {
  // Rust's to_ascii_lowercase: toLowerCase would also fold e.g. the Kelvin sign to "k".
  const policy = trimWhitespace(value).replace(/[A-Z]/g, (letter) => letter.toLowerCase());
  const known = ALGORITHM_POLICIES.find((candidate) => candidate === policy);
  if (known === undefined) throw invalidEnvironment(name, value);
  return known;
}

/**
 * Checks that `order` names every rank of a `worldSize` world exactly once and returns a copy.
 * Checked in the reference's order: the length, then each rank in turn for its range and for a
 * repeat, so the first offending rank is the one reported.
 */
export function validateRingOrder(worldSize: number, order: readonly number[]): number[] {
  checkWorldSize(worldSize);
  if (order.length !== worldSize) {
    throw new ConfigurationError(
      `invalid collective ring: contains ${order.length} ranks, expected ${worldSize}`,
    );
  }
  const seen = new Uint8Array(worldSize);
  for (const rank of order) {
    if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize) throw rankOutOfRange(rank, worldSize);
    if (seen[rank]) throw new ConfigurationError(`invalid collective ring: rank ${rank} appears more than once`);
    seen[rank] = 1;
  }
  return [...order];
}

/** Reads GX1_RING_ORDER: comma-separated ranks ("0,2,1,3"), each trimmed, forming a valid ring. */
export function parseRingOrder(worldSize: number, value: string): number[] {
  const order = value.split(',').map((rank) => {
    const parsed = parseUnsigned(trimWhitespace(rank), MAX_U32);
    if (parsed === undefined) throw invalidEnvironment('GX1_RING_ORDER', value);
    return parsed;
  });
  return validateRingOrder(worldSize, order);
}

/** `text` split at the first `separator`, as Rust's `split_once`. */
function splitOnce(text: string, separator: string): [string, string] | undefined {
  const index = text.indexOf(separator);
  return index < 0 ? undefined : [text.slice(0, index), text.slice(index + separator.length)];
}

/**
 * Reads GX1_TOPOLOGY_LINKS: comma-separated `first-second:bandwidthMbps:latencyNs` entries, blank
 * entries skipped, each number trimmed. A link is symmetric (it sets both directions) and a
 * later entry for the same rank pair, in either order, replaces an earlier one, as the
 * reference's link matrix does. Pairs not listed have no link.
 *
 * Units map one to one: the reference's `bandwidth_mbps` is megabytes per second (it times a
 * transfer as bytes * 1000 / bandwidth_mbps ns) and so is our `bandwidthMbps`; latency is
 * nanoseconds in both. The one difference: the reference accepts a zero latency and our
 * topology holds only positive metrics, so a declared 0 ns becomes 1 ns, the floor the probe
 * also applies to what it measures.
 */
export function parseTopologyLinks(worldSize: number, value: string): CollectiveTopology {
  checkWorldSize(worldSize);
  const pairs = new Map<string, TopologyLink>();
  for (const encoded of value.split(',')) {
    const entry = trimWhitespace(encoded);
    if (entry === '') continue;
    const [ranks, metrics] = splitOnce(entry, ':') ?? [];
    const [first, second] = splitOnce(ranks ?? '', '-') ?? [];
    const [bandwidth, latency] = splitOnce(metrics ?? '', ':') ?? [];
    const read = (part: string | undefined, maximum?: number) =>
      part === undefined ? undefined : parseUnsigned(trimWhitespace(part), maximum);
    const source = read(first, MAX_U32);
    const destination = read(second, MAX_U32);
    const bandwidthMbps = read(bandwidth);
    const latencyNs = read(latency);
    if (
      source === undefined ||
      destination === undefined ||
      bandwidthMbps === undefined ||
      latencyNs === undefined
    ) {
      throw invalidEnvironment('GX1_TOPOLOGY_LINKS', value);
    }
    for (const rank of [source, destination]) {
      if (rank >= worldSize) throw rankOutOfRange(rank, worldSize);
    }
    if (source === destination) throw new ConfigurationError(`topology rank ${source} links to itself`);
    if (bandwidthMbps === 0) {
      throw new ConfigurationError(`topology link ${source}-${destination} has zero bandwidth`);
    }
    const key = `${Math.min(source, destination)}-${Math.max(source, destination)}`;
    pairs.set(key, { source, destination, bandwidthMbps, latencyNs: Math.max(latencyNs, 1) });
  }
  const links = [...pairs.values()].flatMap((link) => [
    link,
    { ...link, source: link.destination, destination: link.source },
  ]);
  return new CollectiveTopology({ worldSize, links });
}

/**
 * A topology's links as GX1_TOPOLOGY_LINKS writes them (`0-1:MBps:ns,...`, each pair once, its
 * first-to-second link): what `parseTopologyLinks` reads back, for symmetric links as the probe
 * measures them.
 */
export function formatTopologyLinks(topology: CollectiveTopology): string {
  return topology.links
    .filter((link) => link.source < link.destination)
    .map((link) => `${link.source}-${link.destination}:${link.bandwidthMbps}:${link.latencyNs}`)
    .join(',');
}

/**
 * Reads a byte count such as GX1_RING_THRESHOLD_BYTES, as the reference's usize variables: an
 * unsigned decimal integer, not trimmed (a space is an error there too).
 */
export function parseByteCount(name: string, value: string): number {
  const parsed = parseUnsigned(value);
  if (parsed === undefined) throw invalidEnvironment(name, value);
  return parsed;
}

/** Checks a GX1_RING_CHANNELS count against the reference's range 1..=64 and returns it. */
export function validateRingChannels(channels: number): number {
  if (!Number.isInteger(channels) || channels < 1 || channels > MAX_RING_CHANNELS) {
    throw new ConfigurationError(
      `invalid collective ring channel count ${channels}; expected 1..=${MAX_RING_CHANNELS}`,
    );
  }
  return channels;
}
