import { concatMap, ignoreElements, lastValueFrom, map, merge, type MonoTypeOperatorFunction } from 'rxjs';
import { ConfigurationError } from '../errors.js';
import { ElementType } from '../protocol/element-type.js';
import type { Links, MessageShape } from '../transport/links/links.js';

/**
 * One stream of probe messages on one rail: the tag the measured bytes travel under, and the tag
 * their acknowledgements come back under (the receiver to the sender, on the same rail).
 */
export interface ProbeStream {
  readonly rail: number;
  readonly tag: bigint;
  readonly acknowledgementTag: bigint;
}

/** An acknowledgement carries nothing: its arrival is the message. */
const ACKNOWLEDGEMENT = new Uint8Array(0);

function bytesShape(byteCount: number): MessageShape {
  return { elementType: ElementType.U8, count: byteCount };
}

/** Fails a receive that did not bring exactly `byteCount` bytes from `peer` on `rail`. */
function exactly(byteCount: number, peer: number, rail: number): MonoTypeOperatorFunction<Uint8Array> {
  return map((bytes) => {
    if (bytes.length !== byteCount) {
      throw new ConfigurationError(
        `topology probe from rank ${peer} on rail ${rail} received ${bytes.length} bytes, expected ${byteCount}`,
      );
    }
    return bytes;
  });
}

/**
 * Sends `bytes` to `receiver` and resolves once the receiver has acknowledged them, i.e. once they
 * were delivered: a send alone completes when the local transport took the bytes (a socket
 * accepts a write into its buffer long before they reach the peer), which says nothing about the
 * link. The acknowledgement's receive is posted together with the send, so an acknowledgement that
 * comes back before the write completes is not missed, and a failing send withdraws it.
 */
export function sendDelivered(links: Links, stream: ProbeStream, receiver: number, bytes: Uint8Array): Promise<void> {
  const delivered = merge(
    links.send(stream.rail, receiver, stream.tag, bytes, bytesShape(bytes.length)),
    links.receive(stream.rail, receiver, stream.acknowledgementTag, bytesShape(0)).pipe(exactly(0, receiver, stream.rail)),
  );
  return lastValueFrom(delivered.pipe(ignoreElements()), { defaultValue: undefined });
}

/** Receives one message of exactly `byteCount` bytes from `sender`, then acknowledges it. */
export function receiveAndAcknowledge(links: Links, stream: ProbeStream, sender: number, byteCount: number): Promise<void> {
  const acknowledged = links.receive(stream.rail, sender, stream.tag, bytesShape(byteCount)).pipe(
    exactly(byteCount, sender, stream.rail),
    concatMap(() => links.send(stream.rail, sender, stream.acknowledgementTag, ACKNOWLEDGEMENT, bytesShape(0))),
  );
  return lastValueFrom(acknowledged, { defaultValue: undefined });
}
