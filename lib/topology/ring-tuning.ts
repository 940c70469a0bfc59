import { ConfigurationError } from '../errors.js';
import { CollectiveTopology, type TopologyLink } from './collective-topology.js';

/**
 * The reference's collective tuning values as they arrive in environment variables
 * (GX1_COLLECTIVE_ALGORITHM, GX1_RING_ORDER, GX1_TOPOLOGY_LINKS, byte counts such as
 * GX1_RING_THRESHOLD_BYTES, GX1_RING_CHANNELS). Each parser accepts exactly what the reference
 * accepts and fails with the reference's message, so a job configured for one runs on the other.
 */

/** Which collective algorithm family a job asks for; `auto` lets the planner choose. */
export type AlgorithmPolicy = 'auto' | 'direct' | 'ring' | 'hierarchical';

const ALGORITHM_POLICIES: readonly AlgorithmPolicy[] = ['auto', 'direct', 'ring', 'hierarchical'];

/** The reference caps ring channels (GX1_RING_CHANNELS) at this many. */
const MAX_RING_CHANNELS = 64;

/** Ranks are u32 in the reference; a larger number is a parse error there, not a range error. */
const MAX_U32 = 0xffff_ffff;

/**
 * Rust's `str::trim` removes Unicode White_Space, which differs from String.prototype.trim: it
 * also strips U+0085 (next line) and keeps U+FEFF (byte order mark).
 */
const RUST_WHITESPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const SURROUNDING_WHITESPACE = new RegExp(`^${RUST_WHITESPACE}+|${RUST_WHITESPACE}+$`, 'g');

function trimWhitespace(text: string): string {
  return text.replace(SURROUNDING_WHITESPACE, '');
}

/**
 * The value of a Rust unsigned-integer parse (`"+7"` and `"007"` are 7; no sign other than `+`,
 * no whitespace), or undefined where Rust fails or the value exceeds `maximum`. The reference's
 * u64 and usize go to 2^64 - 1; here they stop at Number.MAX_SAFE_INTEGER, the largest integer a
 * number holds exactly, and a larger value is refused rather than silently rounded.
 */
function parseUnsigned(text: string, maximum = Number.MAX_SAFE_INTEGER): number | undefined {
  if (!/^\+?[0-9]+$/.test(text)) return undefined;
  const value = Number(text);
  return value <= maximum ? value : undefined;
}

/** The reference's `InvalidEnvironment` error; Rust's `{:?}` quoting becomes JSON quoting. */
function invalidEnvironment(name: string, value: string): ConfigurationError {
  return new ConfigurationError(`invalid ${name} value ${JSON.stringify(value)}`);
}

function rankOutOfRange(rank: number, worldSize: number): ConfigurationError {
  return new ConfigurationError(`topology rank ${rank} is outside world size ${worldSize}`);
}

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
