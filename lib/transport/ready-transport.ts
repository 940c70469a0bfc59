import { ConfigurationError } from '../errors.js';
import type { FrameHeader } from '../protocol/header.js';
import type { CollectiveTransport, RankTransport } from './transport-kind.js';

/**
 * The coordinator's transport in its Ready (docs/protocol.md 8.1): bytes 80..87, which a Ready
 * never needs for a communicator, hold 1 for tcp_host_staged, 2 for tcp_peer; 0 (a coordinator
 * of revision 8 or earlier) says nothing. A rank that chose no transport takes the coordinator's,
 * and one that chose another is told which transport each side runs, instead of meeting a
 * coordinator that does not understand its requests.
 */
const CODES: Readonly<Record<CollectiveTransport, bigint>> = { tcp_host_staged: 1n, tcp_peer: 2n };

/** What a coordinator running `transport` puts in bytes 80..87 of its Ready. */
export function readyTransportField(transport: CollectiveTransport): bigint {
  return CODES[transport];
}

/** The transport a Ready says its coordinator runs, or null where it does not say (or says what this revision does not know). */
export function readyTransport(ready: FrameHeader): CollectiveTransport | null {
  const found = (Object.keys(CODES) as CollectiveTransport[]).find((transport) => CODES[transport] === ready.communicator);
  return found ?? null;
}

/**
 * The transport a rank runs, once its coordinator's Ready said (`coordinator`, null where it did
 * not): the rank's own where it chose one or the coordinator does not say, else the
 * coordinator's. A rank that chose another than the coordinator's fails, naming both.
 */
export function agreedTransport(rank: number, own: RankTransport, coordinator: CollectiveTransport | null, where: string): CollectiveTransport {
  if (coordinator === null || coordinator === own.transport) return own.transport;
  if (own.chosenBy === null) return coordinator;
  throw new ConfigurationError(
    `rank ${rank} runs transport ${own.transport} (${own.chosenBy}), the coordinator at ${where} runs ${coordinator}: ` +
      'give the ranks the coordinator\'s transport, or leave theirs unset (a rank that sets none takes the coordinator\'s)',
  );
}
