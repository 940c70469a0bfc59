import { ProtocolError } from '../errors.js';

/**
 * The counts prefix of an AllToAllV payload (flag COUNTS_PREFIX): `worldSize` u64 little-endian
 * element counts, one per rank, followed by the elements themselves.
 */
export function encodeCounts(counts: readonly number[]): Uint8Array {
  const bytes = new Uint8Array(counts.length * 8);
  const view = new DataView(bytes.buffer);
  counts.forEach((count, index) => {
    if (!Number.isSafeInteger(count) || count < 0) throw new ProtocolError(`count ${index} is ${count}, expected a non-negative integer`);
    view.setBigUint64(index * 8, BigInt(count), true);
  });
  return bytes;
}

export interface CountsPrefix {
  readonly counts: number[];
  readonly total: number;
  /** The element bytes after the prefix (a view, not a copy). */
  readonly data: Uint8Array;
}

export function readCountsPrefix(payload: Uint8Array, worldSize: number): CountsPrefix {
  const prefixBytes = worldSize * 8;
  if (payload.length < prefixBytes) {
    throw new ProtocolError(`all-to-all-v counts prefix is truncated: ${payload.length} bytes, expected at least ${prefixBytes}`);
  }
  const view = new DataView(payload.buffer, payload.byteOffset, prefixBytes);
  const counts: number[] = [];
  let total = 0;
  for (let rank = 0; rank < worldSize; rank++) {
    const count = view.getBigUint64(rank * 8, true);
    if (count > BigInt(Number.MAX_SAFE_INTEGER)) throw new ProtocolError(`all-to-all-v count for rank ${rank} is ${count}, too large`);
    counts.push(Number(count));
    total += Number(count);
  }
  if (!Number.isSafeInteger(total)) throw new ProtocolError('all-to-all-v count sum overflow');
  return { counts, total, data: payload.subarray(prefixBytes) };
}
