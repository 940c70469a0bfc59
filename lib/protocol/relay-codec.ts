import { ProtocolError } from '../errors.js';

/**
 * The hub's reply in a relayed mesh exchange (docs/protocol.md 9.7): every rank's data, by rank,
 * little-endian: count u32 (the world size), then count lengths u32, then the parts one after
 * the other. Lengths let parts differ (a broadcast's non-roots send none). The reply is written
 * into `allocate(bytes)` (every byte of it), by default fresh memory.
 */
export function encodeRelayedParts(parts: readonly Uint8Array[], allocate: (bytes: number) => Uint8Array = (bytes) => new Uint8Array(bytes)): Uint8Array {
  const head = 4 * (parts.length + 1);
  const message = allocate(head + parts.reduce((total, part) => total + part.length, 0));
  const view = new DataView(message.buffer, message.byteOffset, head);
  view.setUint32(0, parts.length, true);
  let offset = head;
  parts.forEach((part, index) => {
    view.setUint32(4 * (index + 1), part.length, true);
    message.set(part, offset);
    offset += part.length;
  });
  return message;
}

/** The parts of a hub's reply, as views of `message`; anything but exactly `worldSize` parts that fill it is refused. */
export function decodeRelayedParts(message: Uint8Array, worldSize: number): Uint8Array[] {
  const head = 4 * (worldSize + 1);
  if (message.length < head) throw new ProtocolError(`relayed exchange reply of ${message.length} bytes is shorter than its ${head}-byte head`);
  const view = new DataView(message.buffer, message.byteOffset, head);
  const count = view.getUint32(0, true);
  if (count !== worldSize) throw new ProtocolError(`relayed exchange reply carries ${count} parts, the world has ${worldSize} ranks`);
  const parts: Uint8Array[] = [];
  let offset = head;
  for (let index = 0; index < count; index++) {
    const length = view.getUint32(4 * (index + 1), true);
    if (length > message.length - offset) {
      throw new ProtocolError(`relayed exchange reply: part ${index} of ${length} bytes overruns the ${message.length}-byte message`);
    }
    parts.push(message.subarray(offset, offset + length));
    offset += length;
  }
  if (offset !== message.length) throw new ProtocolError(`relayed exchange reply has ${message.length - offset} bytes after its last part`);
  return parts;
}
