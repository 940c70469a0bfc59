/**
 * Point-to-point messages in fragments (docs/protocol.md 10.7): how a message is cut, how its fragments
 * are put back together whatever the split of the stream, what may come between them, and what
 * a receiver refuses; and on a real socket, a Heartbeat written during a long message goes out
 * between its fragments while other frames keep their place behind it.
 */
import net from 'node:net';
import { Subject, toArray, firstValueFrom, take } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { FLAG_MORE } from '../../lib/protocol/constants.js';
import { decodeFrames } from '../../lib/protocol/decode-frames.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { makeFrame, makeHeader, type Frame } from '../../lib/protocol/frame.js';
import { encodeHeader, type FrameHeader } from '../../lib/protocol/header.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { FrameChannel, outgoing, type OutgoingFrame } from '../../lib/transport/frame-channel.js';
import { assembleFragments, FRAGMENT_BYTES, FragmentAssembly, fragments } from '../../lib/transport/fragments.js';

const uniqueId = UniqueId.fromBytes(new Array(16).fill(5));

/** A Send of `count` f32 from rank 1 to rank 0, its bytes 0, 1, 2, ... (mod 256). */
function send(count: number, fields: { sequence?: bigint; tag?: bigint } = {}): OutgoingFrame {
  const payload = Uint8Array.from({ length: count * 4 }, (_, index) => index & 0xff);
  return outgoing(makeFrame({ uniqueId, opcode: Opcode.Send, elementType: ElementType.F32, sourceRank: 1, destinationRank: 0, worldSize: 2, elementCount: count, tag: 7n, ...fields }, payload));
}
const heartbeat = (sequence: bigint) => outgoing(makeFrame({ uniqueId, opcode: Opcode.Heartbeat, sourceRank: 1, worldSize: 2, sequence }));
const receiveRequest = () => outgoing(makeFrame({ uniqueId, opcode: Opcode.Receive, elementType: ElementType.F32, sourceRank: 1, destinationRank: 0, worldSize: 2, elementCount: 4 }));

/** The bytes of `frames` on the wire. */
function wire(frames: Iterable<OutgoingFrame>): Uint8Array {
  return Buffer.concat([...frames].flatMap((frame) => [encodeHeader(frame.header), ...frame.parts]));
}

/** Decodes `chunks` and puts fragments together, as a FrameChannel does. */
async function assemble(chunks: Uint8Array[]): Promise<Frame[]> {
  const assembly = new FragmentAssembly();
  const source = new Subject<Uint8Array>();
  const frames = firstValueFrom(
    source.pipe(decodeFrames({ allocate: (header) => assembly.target(header) ?? new Uint8Array(header.payloadBytes), admit: (header) => assembly.admit(header) }), assembleFragments(assembly), toArray()),
  );
  for (const chunk of chunks) source.next(chunk);
  source.complete();
  return frames;
}

const payloadOf = (frame: OutgoingFrame) => Buffer.concat(frame.parts);

describe('fragments: cutting', () => {
  it('cuts a message into fragments of whole elements: MORE on all but the last, elementCount what is left, views of the data', () => {
    const message = send(10); // 40 bytes
    const cut = [...fragments(message, 18)]; // 16-byte fragments: 4 f32 each
    expect(cut.map((fragment) => [fragment.header.flags & FLAG_MORE, fragment.header.elementCount, fragment.header.payloadBytes])).toEqual([
      [FLAG_MORE, 10, 16],
      [FLAG_MORE, 6, 16],
      [0, 2, 8],
    ]);
    expect(cut.every((fragment) => fragment.parts.every((part) => part.buffer === message.parts[0]!.buffer))).toBe(true);
    expect(Buffer.concat(cut.flatMap((fragment) => fragment.parts))).toEqual(payloadOf(message));
    for (const fragment of cut) expect({ ...fragment.header, flags: 0, elementCount: 0, payloadBytes: 0 }).toEqual({ ...message.header, flags: 0, elementCount: 0, payloadBytes: 0 });
  });

  it('cuts as docs/protocol.md 10.7 shows: 786434 f32 in fragments of 1 MiB', () => {
    const count = 786434;
    const message = outgoing(makeFrame({ uniqueId, opcode: Opcode.Send, elementType: ElementType.F32, sourceRank: 1, destinationRank: 0, worldSize: 2, sequence: 4n, tag: 7n, elementCount: count }, new Uint8Array(count * 4)));
    expect([...fragments(message)].map(({ header }) => [header.flags, header.elementCount, header.payloadBytes])).toEqual([
      [0x0011, 786434, 1048576],
      [0x0011, 524290, 1048576],
      [0x0011, 262146, 1048576],
      [0x0001, 2, 8],
    ]);
  });

  it('cuts across payload parts; a message within one fragment, and any other frame, goes as it is', () => {
    const whole = send(6);
    const bytes = whole.parts[0]!;
    const split: OutgoingFrame = { header: whole.header, parts: [bytes.subarray(0, 5), bytes.subarray(5, 13), bytes.subarray(13)] };
    const cut = [...fragments(split, 8)];
    expect(cut.map((fragment) => fragment.parts.map((part) => part.length))).toEqual([[5, 3], [5, 3], [8]]);
    expect(Buffer.concat(cut.flatMap((fragment) => fragment.parts))).toEqual(Buffer.from(bytes));
    expect([...fragments(whole, 24)]).toEqual([whole]);
    const gather = outgoing(makeFrame({ uniqueId, opcode: Opcode.AllGather, elementType: ElementType.U8, worldSize: 2, elementCount: 64 }, new Uint8Array(64)));
    expect([...fragments(gather, 8)]).toEqual([gather]);
    expect(FRAGMENT_BYTES).toBe(1 << 20);
  });
});

describe('fragments: putting them together', () => {
  it('gives back the whole message, with Heartbeats between its fragments passed on in their place, however the stream is split', async () => {
    const message = send(10);
    const [first, ...rest] = [...fragments(message, 16)];
    const stream = wire([first!, heartbeat(0n), rest[0]!, heartbeat(1n), rest[1]!, receiveRequest()]);
    for (let at = 0; at <= stream.length; at += 7) {
      const frames = await assemble([stream.subarray(0, at), stream.subarray(at)]);
      expect(frames.map((frame) => frame.header.opcode)).toEqual([Opcode.Heartbeat, Opcode.Heartbeat, Opcode.Send, Opcode.Receive]);
      const whole = frames[2]!;
      expect({ ...whole.header, uniqueId: null }).toEqual({ ...message.header, uniqueId: null });
      expect(whole.header.uniqueId.equals(uniqueId)).toBe(true);
      expect(Buffer.from(whole.payload)).toEqual(payloadOf(message));
    }
  });

  it('decodes a fragment that spans socket chunks straight into its place in the message', async () => {
    const message = send(64);
    const stream = wire(fragments(message, 64));
    const targets: Uint8Array[] = [];
    const assembly = new FragmentAssembly();
    const target = assembly.target.bind(assembly);
    assembly.target = (header) => {
      const place = target(header);
      if (place !== null) targets.push(place);
      return place;
    };
    const source = new Subject<Uint8Array>();
    const frames = firstValueFrom(source.pipe(decodeFrames({ allocate: (header) => assembly.target(header) ?? new Uint8Array(header.payloadBytes), admit: (header) => assembly.admit(header) }), assembleFragments(assembly), take(1)));
    for (let at = 0; at < stream.length; at += 50) source.next(stream.subarray(at, at + 50));
    const whole = await frames;
    expect(targets.length).toBeGreaterThan(0);
    expect(targets.every((place) => place.buffer === whole.payload.buffer)).toBe(true);
    expect(Buffer.from(whole.payload)).toEqual(payloadOf(message));
  });

  const refused = async (frames: OutgoingFrame[], text: string) => {
    await expect(assemble([wire(frames)])).rejects.toThrow(expect.objectContaining({ code: 'PROTOCOL', message: text }));
  };
  const [first, second] = [...fragments(send(10), 16)];

  it('refuses another frame between fragments, a fragment that does not continue its message, and an end inside one', async () => {
    await refused([first!, receiveRequest()], 'Receive sequence 0 came between the fragments of Send sequence 0: only Heartbeat and Abort may');
    await refused([first!, ...fragments(send(10, { sequence: 1n }), 16)], 'Send sequence 1 came between the fragments of Send sequence 0: only Heartbeat and Abort may');
    await refused([first!, { ...second!, header: { ...second!.header, tag: 8n } }], 'a fragment of Send sequence 0 has another tag than its first fragment');
    await refused([first!, first!], 'a fragment of Send sequence 0 counts 10 elements, expected the 6 left');
    await refused([first!, second!], 'stream ended inside Send sequence 0 in fragments: 32 of 40 bytes received');
  });

  it('refuses a message in fragments over the frame limit at its first header', async () => {
    const header: FrameHeader = makeHeader(
      { uniqueId, opcode: Opcode.Send, elementType: ElementType.F64, flags: FLAG_MORE, sourceRank: 1, destinationRank: 0, worldSize: 2, elementCount: 2 ** 27 + 1 },
      8,
    );
    await refused([{ header, parts: [new Uint8Array(8)] }], 'Send sequence 0 in fragments declares 1073741832 bytes, over the limit of 1073741824');
  });
});

describe('FrameChannel: a Heartbeat is not held up by a message in fragments', () => {
  const sockets: net.Socket[] = [];
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.destroy();
  });

  it('writes it between two fragments; a frame sent the ordinary way keeps its place behind the message', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
    const writer = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise<void>((resolve) => writer.once('connect', resolve));
    const reader = await accepted;
    server.close();
    sockets.push(writer, reader);
    const sender = new FrameChannel(writer);
    const receiver = new FrameChannel(reader);
    const count = (64 * FRAGMENT_BYTES) / 4;
    const message = outgoing(makeFrame({ uniqueId, opcode: Opcode.Send, elementType: ElementType.F32, sourceRank: 1, destinationRank: 0, worldSize: 2, elementCount: count }, new Uint8Array(count * 4).fill(9)));
    const arrived = firstValueFrom(receiver.frames$.pipe(take(3), toArray()));
    sender.sendInFragments(message);
    expect(sender.send(receiveRequest())).toBe(false);
    expect(sender.send(heartbeat(0n))).toBe(true);
    const frames = await arrived;
    expect(frames.map((frame) => frame.header.opcode)).toEqual([Opcode.Heartbeat, Opcode.Send, Opcode.Receive]);
    expect(frames[1]!.payload.length).toBe(count * 4);
    expect(frames[1]!.payload.every((byte) => byte === 9)).toBe(true);
    await sender.drained();
  });
});
