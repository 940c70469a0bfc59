import { ProtocolError, WrongDestinationError, WrongSessionError } from '../errors.js';
import type { Frame } from '../protocol/frame.js';
import type { UniqueId } from '../protocol/unique-id.js';

/** Checks that a coordinator response belongs to this session, rank and sequence (`validate_response`). */
export function validateResponse(frame: Frame, uniqueId: UniqueId, rank: number, worldSize: number, sequence: bigint): void {
  const header = frame.header;
  if (!header.uniqueId.equals(uniqueId) || header.worldSize !== worldSize) throw new WrongSessionError();
  if (header.destinationRank !== rank) throw new WrongDestinationError(rank, header.destinationRank);
  if (header.sequence !== sequence) {
    throw new ProtocolError(`response sequence ${header.sequence} does not match expected sequence ${sequence}`);
  }
}
