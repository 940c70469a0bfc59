import { concatWith, defer, EMPTY, filter, map, type MonoTypeOperatorFunction } from 'rxjs';
import { ProtocolError } from '../errors.js';
import { FLAG_COUNTS_PREFIX, FLAG_MORE, MAX_FRAME_PAYLOAD_BYTES } from '../protocol/constants.js';
import { elementWidth } from '../protocol/element-type.js';
import type { Frame } from '../protocol/frame.js';
import type { FrameHeader } from '../protocol/header.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';

/**
 * Point-to-point messages in fragments (docs/protocol.md 10.7): a Send or Receive frame larger
 * than a fragment goes out as frames of at most FRAGMENT_BYTES each, so a Heartbeat or an Abort
 * written meanwhile waits behind one fragment, not behind the whole message. Each fragment is a
 * frame of its own: the message's header with flag MORE on every fragment but the last, its own
 * payloadBytes, and as elementCount the elements from its first to the message's last (the first
 * fragment's is the message's, so a receiver allocates the message once).
 */

/** What rxccl puts in one fragment: 1 MiB, a whole number of elements of every width. */
export const FRAGMENT_BYTES = 1 << 20;

/** The frames written at once even between the fragments of a message: they must never wait behind data. */
export function jumpsFragments(header: FrameHeader): boolean {
  return header.opcode === Opcode.Heartbeat || header.opcode === Opcode.Abort;
}

/** A frame as written: its header and payload parts (`OutgoingFrame`, which the channel that writes fragments defines). */
type Parts = { readonly header: FrameHeader; readonly parts: readonly Uint8Array[] };

/**
 * The frames `frame` is written as: itself when it is no point-to-point data or fits in one
 * fragment, else its fragments in order. Fragment payloads are views of `frame`'s parts, never copies.
 */
export function* fragments(frame: Parts, fragmentBytes = FRAGMENT_BYTES): Generator<Parts> {
  const { header } = frame;
  const total = header.payloadBytes;
  const cut = (header.opcode === Opcode.Send || header.opcode === Opcode.Receive) && (header.flags & FLAG_COUNTS_PREFIX) === 0;
  if (!cut || total <= fragmentBytes) {
    yield frame;
    return;
  }
  const width = elementWidth(header.elementType);
  const step = fragmentBytes - (fragmentBytes % width);
  let part = 0;
  let within = 0;
  for (let offset = 0; offset < total; offset += step) {
    const bytes = Math.min(step, total - offset);
    const views: Uint8Array[] = [];
    for (let wanted = bytes; wanted > 0; ) {
      const source = frame.parts[part]!;
      const take = Math.min(wanted, source.length - within);
      if (take > 0) views.push(source.subarray(within, within + take));
      within += take;
      wanted -= take;
      if (within === source.length) {
        part += 1;
        within = 0;
      }
    }
    const flags = offset + bytes === total ? header.flags & ~FLAG_MORE : header.flags | FLAG_MORE;
    yield { header: { ...header, flags, elementCount: (total - offset) / width, payloadBytes: bytes }, parts: views };
  }
}

/** The message whose fragments are arriving. */
interface Assembling {
  readonly first: FrameHeader;
  readonly totalBytes: number;
  payload: Uint8Array | null;
  filled: number;
}

/**
 * Puts the fragments arriving on one connection back together. It sees each header before its
 * payload (`admit`), so a fragment out of place is refused at its header, and a fragment's payload is
 * decoded straight into its place in the message (`target`): the message costs one buffer and
 * each byte one copy, as a message in one frame does. Between the fragments of a message only
 * frames that `jumpsFragments` may come; they pass through.
 */
export class FragmentAssembly {
  private message: Assembling | null = null;
  /** The header of the fragment whose payload is arriving, until its frame is taken. */
  private fragment: FrameHeader | null = null;

  /** Checks where `header` stands: a first fragment, the next fragment of the message, or a frame that may come between. */
  admit(header: FrameHeader): void {
    const message = this.message;
    if (message === null) {
      if ((header.flags & FLAG_MORE) === 0) return;
      const width = elementWidth(header.elementType);
      const totalBytes = header.elementCount * width;
      // The limit of one frame holds for a message in fragments too: nothing larger is allocated.
      if (totalBytes > MAX_FRAME_PAYLOAD_BYTES) {
        const exact = BigInt(header.elementCount) * BigInt(width);
        throw new ProtocolError(`${describe(header)} in fragments declares ${exact} bytes, over the limit of ${MAX_FRAME_PAYLOAD_BYTES}`);
      }
      this.message = { first: header, totalBytes, payload: null, filled: 0 };
      this.fragment = header;
      return;
    }
    if (jumpsFragments(header)) return;
    const first = message.first;
    if (header.opcode !== first.opcode || header.sequence !== first.sequence) {
      throw new ProtocolError(`${describe(header)} came between the fragments of ${describe(first)}: only Heartbeat and Abort may`);
    }
    const field = differingField(header, first);
    if (field !== null) throw new ProtocolError(`a fragment of ${describe(first)} has another ${field} than its first fragment`);
    const left = (message.totalBytes - message.filled) / elementWidth(first.elementType);
    if (header.elementCount !== left) throw new ProtocolError(`a fragment of ${describe(first)} counts ${header.elementCount} elements, expected the ${left} left`);
    this.fragment = header;
  }

  /** Where the payload of `header` goes: its place in its message when it is a fragment, else null (anywhere). */
  target(header: FrameHeader): Uint8Array | null {
    if (header !== this.fragment) return null;
    const message = this.message!;
    message.payload ??= new Uint8Array(message.totalBytes);
    return message.payload.subarray(message.filled, message.filled + header.payloadBytes);
  }

  /** The frame to hand on for `frame`: itself, the whole message after its last fragment, or null after any other fragment. */
  accept(frame: Frame): Frame | null {
    if (frame.header !== this.fragment) return frame;
    this.fragment = null;
    const message = this.message!;
    const payload = (message.payload ??= new Uint8Array(message.totalBytes));
    // Decoded in place unless it came inside one socket chunk (a view of it): then it is copied here.
    if (frame.payload.buffer !== payload.buffer || frame.payload.byteOffset !== payload.byteOffset + message.filled) payload.set(frame.payload, message.filled);
    message.filled += frame.payload.length;
    if ((frame.header.flags & FLAG_MORE) !== 0) return null;
    this.message = null;
    return { header: { ...message.first, flags: message.first.flags & ~FLAG_MORE, payloadBytes: message.totalBytes }, payload };
  }

  /** Throws if the stream ended inside a message. */
  end(): void {
    const message = this.message;
    if (message === null) return;
    throw new ProtocolError(`stream ended inside ${describe(message.first)} in fragments: ${message.filled} of ${message.totalBytes} bytes received`);
  }
}

/** Hands on whole messages: the frames of `source` with each message's fragments put back together by `assembly`. */
export function assembleFragments(assembly: FragmentAssembly): MonoTypeOperatorFunction<Frame> {
  return (source) =>
    source.pipe(
      map((frame) => assembly.accept(frame)),
      filter((frame): frame is Frame => frame !== null),
      // The stream may end only between messages.
      concatWith(defer(() => (assembly.end(), EMPTY))),
    );
}

function describe(header: FrameHeader): string {
  return `${opcodeName(header.opcode)} sequence ${header.sequence}`;
}

/** The first field, besides the counts and the MORE flag, in which a fragment differs from its message's first fragment. */
function differingField(fragment: FrameHeader, first: FrameHeader): string | null {
  const fields = ['elementType', 'reduceOp', 'sourceRank', 'destinationRank', 'rootRank', 'worldSize', 'tag', 'communicator'] as const;
  for (const field of fields) if (fragment[field] !== first[field]) return field;
  if (!fragment.uniqueId.equals(first.uniqueId)) return 'uniqueId';
  if (((fragment.flags ^ first.flags) & ~FLAG_MORE) !== 0) return 'flags';
  return null;
}
