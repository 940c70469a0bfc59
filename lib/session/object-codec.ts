import { deserialize, serialize } from 'node:v8';
import { ConfigurationError, ObjectTooLargeError, RxcclError, UnserializableObjectError } from '../errors.js';

/**
 * Values as bytes for the object messages (`sendObject`, `broadcastObject`, ...): the structured
 * clone's wire form (`v8.serialize`, what `postMessage` and `structuredClone` use), moved as u8
 * tensors. Every serialization starts with v8's version tag, 0xFF.
 *
 * In a collective a rank whose value cannot go (v8 refuses it, or it is over the limit) still takes
 * part, contributing a **refusal notice** instead: 0x00 (never a serialization's first byte), a
 * kind byte, then 1: v8's reason as UTF-8; 2: the size and the limit as two f64 (little-endian).
 * Every rank that receives it fails with the same typed error naming that rank, and the collective
 * completes on every rank: no rank waits for one that gave up on its own.
 */

/** What a rank contributes: its value's bytes, or a refusal notice and its own error. */
export interface Contribution {
  readonly bytes: Uint8Array;
  /** Why `bytes` is a notice (this rank's own error, v8's as its cause), else null. */
  readonly refusal: RxcclError | null;
}

const NOTICE = 0x00;
const UNSERIALIZABLE = 1;
const TOO_LARGE = 2;

/** `value` serialized, or the typed error that says why it cannot be (nothing is sent then). */
export function encodeObject(value: unknown, rank: number, limit: number, operation: string): Uint8Array {
  const { bytes, refusal } = contribute(value, rank, limit, operation);
  if (refusal !== null) throw refusal;
  return bytes;
}

/** `value` serialized, or a refusal notice (see above) with this rank's error. */
export function contribute(value: unknown, rank: number, limit: number, operation: string): Contribution {
  let bytes: Uint8Array;
  try {
    const buffer = serialize(value);
    bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const notice = new TextEncoder().encode(reason);
    return { bytes: Uint8Array.of(NOTICE, UNSERIALIZABLE, ...notice), refusal: new UnserializableObjectError(rank, reason, operation, { cause: error }) };
  }
  if (bytes.length <= limit) return { bytes, refusal: null };
  const notice = new Uint8Array(2 + 16);
  notice.set([NOTICE, TOO_LARGE]);
  new DataView(notice.buffer).setFloat64(2, bytes.length, true);
  new DataView(notice.buffer).setFloat64(10, limit, true);
  return { bytes: notice, refusal: new ObjectTooLargeError(rank, bytes.length, limit, operation) };
}

/**
 * The value `bytes` carry from `rank` in a collective, where a refusal notice throws the error it
 * stands for (rank null: a point-to-point message, never a notice); bytes that are no
 * serialization are a configuration error.
 */
export function decodeObject(bytes: Uint8Array, rank: number | null, operation: string, tag?: bigint): unknown {
  if (bytes.length >= 2 && bytes[0] === NOTICE && rank !== null) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (bytes[1] === UNSERIALIZABLE) throw new UnserializableObjectError(rank, new TextDecoder().decode(bytes.subarray(2)), operation);
    if (bytes[1] === TOO_LARGE && bytes.length === 18) throw new ObjectTooLargeError(rank, view.getFloat64(2, true), view.getFloat64(10, true), operation);
  }
  try {
    return deserialize(bytes);
  } catch (error) {
    const from = rank === null ? '' : ` from rank ${rank}`;
    const under = tag === undefined ? '' : ` with tag ${tag}`;
    throw new ConfigurationError(`${operation}: the message${from}${under} is not a serialized value (was it sent with sendObject?): ${(error as Error).message}`, { cause: error });
  }
}
