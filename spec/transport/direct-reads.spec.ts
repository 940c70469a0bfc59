/**
 * DirectReads drives a socket's `onread`: Node asks it for the buffer of the next read, the kernel
 * writes up to that buffer's length, and the callback says how much came. These tests play Node's
 * part byte-exactly (any split of the stream into reads), then check it on a real loopback socket.
 */
import { EventEmitter } from 'node:events';
import { createServer, type Socket } from 'node:net';
import fc from 'fast-check';
import { firstValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../lib/errors.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { type Frame, makeFrame } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import type { FrameHeader } from '../../lib/protocol/header.js';
import { arbFrame, concatBytes, frameBytes } from '../../lib/testing/index.js';
import { DirectReads, STAGING_BYTES } from '../../lib/transport/direct-reads.js';
import { dialSocket } from '../../lib/transport/tls-settings.js';

/** What DirectReads needs of a socket: its end and error events, and resume. */
class FakeSocket extends EventEmitter {
  resumed = 0;
  resume(): this {
    this.resumed += 1;
    return this;
  }
}

/**
 * Node's side of `onread`: each read fills at most `sizes[i]` bytes (cycling) of the buffer the
 * reader offers next. Returns what each callback answered (false: stop reading).
 */
function deliver(reads: DirectReads, stream: Uint8Array, sizes: readonly number[]): boolean[] {
  const answers: boolean[] = [];
  let offset = 0;
  for (let read = 0; offset < stream.length; read++) {
    const buffer = reads.onread.buffer();
    const bytes = Math.min(buffer.length, sizes[read % sizes.length]!, stream.length - offset);
    buffer.set(stream.subarray(offset, offset + bytes));
    offset += bytes;
    answers.push(reads.onread.callback(bytes, buffer));
  }
  return answers;
}

function collect(reads: DirectReads, socket: FakeSocket, allocate?: (header: FrameHeader) => Uint8Array) {
  const frames: Frame[] = [];
  const ending: { error?: unknown; complete?: boolean } = {};
  const subscription = reads.frames(socket as unknown as Socket, allocate ? { allocate } : {}).subscribe({
    next: (frame) => frames.push(frame),
    error: (error: unknown) => (ending.error = error),
    complete: () => (ending.complete = true),
  });
  return { frames, ending, subscription };
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

describe('DirectReads', () => {
  it('decodes every frame whole under any split of the stream into reads, keeping no view of its staging buffer', () => {
    fc.assert(
      fc.property(fc.array(arbFrame({ maxCount: 2_000 }), { maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 8 }), (sent, sizes) => {
        const reads = new DirectReads();
        const socket = new FakeSocket();
        const { frames, ending } = collect(reads, socket);
        deliver(reads, concatBytes(sent.map(frameBytes)), sizes);
        // Overwrite the staging buffer: a frame that still viewed it would change.
        deliver(reads, new Uint8Array(0), [1]);
        reads.onread.buffer().fill(0xee);
        socket.emit('end');
        expect(ending).toEqual({ complete: true });
        expect(frames).toHaveLength(sent.length);
        frames.forEach((frame, index) => {
          expect(frame.header).toEqual(sent[index]!.header);
          expect(sameBytes(frame.payload, sent[index]!.payload)).toBe(true);
        });
      }),
    );
  });

  it('reads a payload straight into the memory its allocator names, once its header is known', () => {
    fc.assert(
      fc.property(arbFrame({ maxCount: 4_000 }).filter((frame) => frame.payload.length > 0), fc.integer({ min: 1, max: 500 }), (sent, size) => {
        const reads = new DirectReads();
        const destination = new Uint8Array(sent.payload.length);
        const offered: Uint8Array[] = [];
        const { frames } = collect(reads, new FakeSocket(), () => destination);
        let offset = 0;
        const stream = frameBytes(sent);
        while (offset < stream.length) {
          const buffer = reads.onread.buffer();
          offered.push(buffer);
          const bytes = Math.min(buffer.length, size, stream.length - offset);
          buffer.set(stream.subarray(offset, offset + bytes));
          offset += bytes;
          reads.onread.callback(bytes, buffer);
        }
        expect(frames).toHaveLength(1);
        expect(frames[0]!.payload).toBe(destination);
        expect(sameBytes(destination, sent.payload)).toBe(true);
        // Every read after the one that completed the header went into the destination itself.
        const headerReads = Math.ceil(96 / size);
        for (const buffer of offered.slice(headerReads)) expect(buffer.buffer).toBe(destination.buffer);
      }),
    );
  });

  it('holds what arrives before it is read and stops reading; then decodes it on subscribe and resumes', () => {
    const [frame] = fc.sample(arbFrame({ maxCount: 16 }), { numRuns: 1, seed: 7 }) as [Frame];
    const reads = new DirectReads();
    const stream = frameBytes(frame);
    expect(deliver(reads, stream, [stream.length])).toEqual([false]);
    const socket = new FakeSocket();
    const { frames } = collect(reads, socket);
    expect(frames).toHaveLength(1);
    expect(frames[0]!.header).toEqual(frame.header);
    expect(socket.resumed).toBe(1);
  });

  it('a first read that fills its buffer before anyone reads still leaves the next read a byte to go to', () => {
    const reads = new DirectReads();
    const [frame] = fc.sample(arbFrame({ maxCount: 8 }), { numRuns: 1, seed: 11 }) as [Frame];
    const one = frameBytes(frame);
    const copies = Math.ceil((STAGING_BYTES + 1) / one.length);
    const stream = concatBytes(Array.from({ length: copies }, () => one));
    const first = reads.onread.buffer();
    expect(first.length).toBe(STAGING_BYTES - 1);
    first.set(stream.subarray(0, first.length));
    expect(reads.onread.callback(first.length, first)).toBe(false);
    const next = reads.onread.buffer();
    expect(next.length).toBe(1);
    const { frames, ending } = collect(reads, new FakeSocket());
    expect(frames).toHaveLength(Math.floor(first.length / one.length));
    // The read Node makes after the resume goes into that last byte, then on as usual.
    next[0] = stream[first.length]!;
    expect(reads.onread.callback(1, next)).toBe(true);
    deliver(reads, stream.subarray(first.length + 1), [4096]);
    expect(frames).toHaveLength(copies);
    expect(frames.every((received) => sameBytes(received.payload, frame.payload))).toBe(true);
    expect(ending).toEqual({});
  });

  it('ends with a ProtocolError on corrupt bytes, and after its reader left drops what comes without stopping', () => {
    const reads = new DirectReads();
    const socket = new FakeSocket();
    const { ending, subscription } = collect(reads, socket);
    expect(deliver(reads, new Uint8Array(96).fill(0x41), [96])).toEqual([true]);
    expect(ending.error).toBeInstanceOf(ProtocolError);
    expect(subscription.closed).toBe(true);
    expect(deliver(reads, new Uint8Array(STAGING_BYTES + 10), [STAGING_BYTES])).toEqual([true, true]);
  });

  it('reads frames over a real loopback socket dialled with its onread, a 4 MiB payload straight into its destination', async () => {
    const small = fc.sample(arbFrame({ maxCount: 8 }), { numRuns: 20, seed: 3 });
    const payload = new Uint8Array(4 << 20).map((_, index) => (index * 7) & 0xff);
    const large = makeFrame({ opcode: Opcode.Send, elementType: ElementType.U8, uniqueId: UniqueId.random(), worldSize: 2, elementCount: payload.length }, payload);
    const sent = [...small, large, ...small];
    const server = createServer((connection) => {
      for (const frame of sent) connection.write(frameBytes(frame));
      connection.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const reads = new DirectReads();
      const socket = await dialSocket('127.0.0.1', (server.address() as { port: number }).port, null, 5_000, () => new Error('timed out'), reads.onread);
      const destination = new Uint8Array(payload.length);
      const allocate = (header: FrameHeader) => (header.payloadBytes === destination.length ? destination : new Uint8Array(header.payloadBytes));
      const received = await firstValueFrom(reads.frames(socket, { allocate }).pipe(toArray()));
      socket.destroy();
      expect(received.map((frame) => frame.header)).toEqual(sent.map((frame) => frame.header));
      expect(received[small.length]!.payload).toBe(destination);
      expect(sameBytes(destination, payload)).toBe(true);
    } finally {
      server.close();
    }
  });
});
