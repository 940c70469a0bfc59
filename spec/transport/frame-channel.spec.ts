/**
 * FrameChannel's writes never leave a caller's payload in the socket's queue when `send` says
 * there is room: a frame is either copied (small, or below the socket's high-water mark, which is
 * 64 KiB from Node 22) or large enough that `send` returns false until the socket drained. A
 * send on a closed connection names the peer it was connected to (never `?:?`).
 */
import net from 'node:net';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { ElementType } from '../../lib/protocol/element-type.js';
import { makeFrame } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { FrameChannel, outgoing } from '../../lib/transport/frame-channel.js';

const sockets: net.Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

/** A connected loopback pair whose writing end has `writableHighWaterMark`. */
async function pair(writableHighWaterMark: number): Promise<{ writer: net.Socket; reader: net.Socket }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  // Node takes the stream option; @types/node does not declare it on sockets.
  const writer = new net.Socket({ writableHighWaterMark } as net.SocketConstructorOpts).connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  await new Promise<void>((resolve) => writer.once('connect', resolve));
  const reader = await accepted;
  server.close();
  sockets.push(writer, reader);
  return { writer, reader };
}

function sendFrame(channel: FrameChannel, payload: Uint8Array) {
  const frame = makeFrame({ uniqueId: UniqueId.random(), opcode: Opcode.Send, worldSize: 2, elementType: ElementType.U8, elementCount: payload.length }, payload);
  return channel.send(outgoing(frame));
}

/** Every chunk `socket.write` is given while `run` runs. */
function written(socket: net.Socket, run: () => void): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  const write = socket.write.bind(socket);
  socket.write = ((chunk: Uint8Array, ...rest: never[]) => {
    chunks.push(chunk);
    return write(chunk, ...rest);
  }) as typeof socket.write;
  try {
    run();
  } finally {
    socket.write = write;
  }
  return chunks;
}

/** Sends a frame with a 32 KiB payload of `fill` through a pair whose writer has `writableHighWaterMark`. */
async function sendOne(writableHighWaterMark: number, fill: number) {
  const { writer, reader } = await pair(writableHighWaterMark);
  const sender = new FrameChannel(writer);
  const receiver = new FrameChannel(reader);
  const payload = new Uint8Array(32 * 1024).fill(fill);
  let accepted = false;
  const chunks = written(writer, () => (accepted = sendFrame(sender, payload)));
  const received = async () => (await firstValueFrom(receiver.frames$)).payload;
  return { sender, payload, accepted, chunks, received };
}

describe('FrameChannel.send and the caller’s payload memory', () => {
  it('copies a frame below the socket’s high-water mark, so the caller may reuse its payload at once', async () => {
    const { payload, accepted, chunks, received } = await sendOne(64 * 1024, 7);
    expect(accepted).toBe(true);
    expect(chunks.some((chunk) => chunk.buffer === payload.buffer)).toBe(false);
    payload.fill(9);
    expect((await received()).every((byte) => byte === 7)).toBe(true);
  });

  it('writes a frame at or above the mark by reference, and says to wait for the drain', async () => {
    const { sender, payload, accepted, chunks, received } = await sendOne(16 * 1024, 5);
    expect(chunks).toContain(payload);
    expect(accepted).toBe(false);
    await sender.drained();
    expect((await received()).every((byte) => byte === 5)).toBe(true);
  });
});

describe('FrameChannel on a closed connection', () => {
  it('names the peer it was connected to, also after the socket was destroyed', async () => {
    const { writer, reader } = await pair(64 * 1024);
    const channel = new FrameChannel(writer);
    writer.destroy();
    expect(() => sendFrame(channel, new Uint8Array(4))).toThrow(`cannot send on closed connection 127.0.0.1:${reader.localPort}`);
  });

  it('a channel made while its socket dials learns the peer when it connects', async () => {
    const server = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    const dialling = net.connect(port, '127.0.0.1');
    sockets.push(dialling);
    const channel = new FrameChannel(dialling);
    await new Promise<void>((resolve) => dialling.once('connect', resolve));
    server.close();
    dialling.destroy();
    const error = (() => {
      try {
        sendFrame(channel, new Uint8Array(4));
      } catch (thrown) {
        return thrown as Error & { code: string };
      }
      throw new Error('sent on a destroyed socket');
    })();
    expect([error.code, error.message]).toEqual(['CHANNEL_CLOSED', `cannot send on closed connection 127.0.0.1:${port}`]);
  });
});
