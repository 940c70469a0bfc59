import { createHash } from 'node:crypto';
import { communicatorText } from '../protocol/message-key.js';
import { UniqueId } from '../protocol/unique-id.js';

/** The world's communicator id: every message of the job's own collectives and point-to-point carries it. */
export const WORLD_COMMUNICATOR = 0n;

/**
 * The id of a communicator that `parent` makes, by `how` it was made (`split <n> color <c>`,
 * `group <sorted ranks> <n>`): the first 8 bytes (little-endian) of SHA-256 over
 * `<parent as 16 hex digits> <how>`, so every member derives it alone, the same, without a
 * message; 0 (the world's) is never an id (it becomes 1).
 */
export function childCommunicatorId(parent: bigint, how: string): bigint {
  const digest = createHash('sha256').update(`${communicatorText(parent).slice(2)} ${how}`).digest();
  const id = digest.readBigUInt64LE(0);
  return id === WORLD_COMMUNICATOR ? 1n : id;
}

/** "GX1COMM\0": the upper half of a communicator's unique id. */
const UNIQUE_ID_MARK = Buffer.from('GX1COMM\0', 'latin1');

/**
 * What a communicator's collective headers (its leader's rounds) carry as their unique id: the id
 * (8 bytes, little-endian), then "GX1COMM\0".
 */
export function communicatorUniqueId(id: bigint): UniqueId {
  const bytes = Buffer.alloc(UniqueId.BYTES);
  bytes.writeBigUInt64LE(id, 0);
  UNIQUE_ID_MARK.copy(bytes, 8);
  return UniqueId.fromBytes(bytes);
}
