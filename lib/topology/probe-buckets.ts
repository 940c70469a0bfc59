import { ConfigurationError } from '../errors.js';
import { MAX_U64 } from '../protocol/constants.js';
import { fnv1a64 } from '../protocol/fnv1a.js';

/**
 * Probe measurements are noisy, but every rank must derive the same topology and the same ring
 * from them. Rounding each metric to a coarse power-of-four bucket, always in the pessimistic
 * direction, makes small run-to-run jitter land in the same bucket, and keeps the wire values
 * exact u64s. All arithmetic is on bigints so 64-bit values round exactly as the reference does.
 */

/** Every probe tag starts with "GZ" in its top 16 bits so it never collides with user tags. */
export const TOPOLOGY_PROBE_TAG_PREFIX = 0x475a_0000_0000_0000n;

const TAG_HASH_MASK = 0x0000_ffff_ffff_ffffn;

function toU64(value: bigint | number): bigint {
  if (typeof value === 'number' && !Number.isInteger(value)) {
    throw new ConfigurationError(`topology probe metric ${value} is not an unsigned 64-bit integer`);
  }
  const exact = BigInt(value);
  if (exact < 0n || exact > MAX_U64) {
    throw new ConfigurationError(`topology probe metric ${value} is not an unsigned 64-bit integer`);
  }
  return exact;
}

/** floor(log2(max(value, 1))), the reference's `63 - leading_zeros`. */
function floorLog2(value: bigint): number {
  return value <= 1n ? 0 : value.toString(2).length - 1;
}

function bandwidthBucket(value: bigint): bigint {
  // Round down to an even power of two: a link is never reported faster than measured.
  return 1n << BigInt(floorLog2(value) & ~1);
}

function latencyBucket(value: bigint): bigint {
  // Round up past the next even power of two: a link is never reported quicker than measured.
  const upperExponent = (floorLog2(value) & ~1) + 2;
  return upperExponent >= 64 ? MAX_U64 : 1n << BigInt(upperExponent);
}

/**
 * The largest power of four not above `value` (0 counts as 1): bandwidth in MB/s rounded down.
 * Returns the type it was given; a number result is exact because buckets are powers of two.
 */
export function conservativeBandwidthBucket(value: bigint): bigint;
export function conservativeBandwidthBucket(value: number): number;
export function conservativeBandwidthBucket(value: bigint | number): bigint | number {
  const bucket = bandwidthBucket(toU64(value));
  return typeof value === 'bigint' ? bucket : Number(bucket);
}

/**
 * The power of four above the value's own power-of-four bucket (saturating at u64::MAX):
 * latency in ns rounded up. A number result of the saturated bucket reads as 2^64.
 */
export function conservativeLatencyBucket(value: bigint): bigint;
export function conservativeLatencyBucket(value: number): number;
export function conservativeLatencyBucket(value: bigint | number): bigint | number {
  const bucket = latencyBucket(toU64(value));
  return typeof value === 'bigint' ? bucket : Number(bucket);
}

/**
 * The upper median (element `length / 2` after sorting), as the reference takes it. The caller's
 * array is left untouched. Only probes with at least one sample call this; none is a bug.
 */
export function median<T extends bigint | number>(samples: readonly T[]): T {
  if (samples.length === 0) {
    throw new ConfigurationError('cannot take the median of zero topology probe samples');
  }
  const sorted = [...samples].sort((left, right) => (left < right ? -1 : left > right ? 1 : 0));
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * The point-to-point tag of one probe stream: FNV-1a over the little-endian bytes of
 * (firstRank u32, secondRank u32, rail u64, direction u64, kind u64), folded under the probe
 * prefix. Distinct streams get distinct tags, so a late message of one phase can never satisfy a
 * receive of another. `direction` is 0 (first -> second) or 1; `kind` is 0 latency,
 * 1 bandwidth, 2 concurrent-rail bandwidth, 3 the receiver's acknowledgements of that rail and
 * direction's messages (rxccl's: the reference's transport acknowledges every send itself).
 */
export function topologyProbeTag(
  firstRank: number,
  secondRank: number,
  rail: number,
  direction: number,
  kind: number,
): bigint {
  for (const [name, value, limit] of [
    ['first rank', firstRank, 0xffff_ffff],
    ['second rank', secondRank, 0xffff_ffff],
    ['rail', rail, Number.MAX_SAFE_INTEGER],
    ['direction', direction, Number.MAX_SAFE_INTEGER],
    ['kind', kind, Number.MAX_SAFE_INTEGER],
  ] as const) {
    if (!Number.isInteger(value) || value < 0 || value > limit) {
      throw new ConfigurationError(`topology probe tag ${name} ${value} is outside 0..=${limit}`);
    }
  }
  const bytes = new Uint8Array(32);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, firstRank, true);
  view.setUint32(4, secondRank, true);
  view.setBigUint64(8, BigInt(rail), true);
  view.setBigUint64(16, BigInt(direction), true);
  view.setBigUint64(24, BigInt(kind), true);
  return TOPOLOGY_PROBE_TAG_PREFIX | (fnv1a64(bytes) & TAG_HASH_MASK);
}
