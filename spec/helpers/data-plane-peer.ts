/**
 * Playing peers of the native data plane's engine in tests (spec/transport/data-plane.spec.ts,
 * single-copy.spec.ts): loopback connections, a peer's reads and cut writes, and the schedules
 * those specs run, compiled with the plane's header exchange.
 */
import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { descriptorOf } from '../../lib/collectives/descriptor.js';
import { withHeaderExchange } from '../../lib/collectives/schedule/header-exchange.js';
import { encodeProgram, type NativeCollective } from '../../lib/collectives/schedule/plane-executor.js';
import type { ScheduleInput, ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import { labelledHeader, messageLabel } from '../../lib/collectives/schedule/message-label.js';
import { DESCRIPTOR_BYTES } from '../../lib/protocol/descriptor-codec.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { type DataPlane, encodeLinkHeader } from '../../lib/transport/data-plane.js';
import { concatBytes } from '../../lib/testing/bytes.js';
import { FrameChannel } from '../../lib/transport/frame-channel.js';

/** A connected loopback pair: the end this rank dialled, and the end the peer accepted. */
export async function loopbackPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const dialled = connect(port, '127.0.0.1');
  await once(dialled, 'connect');
  const [peer] = await accepted;
  server.close();
  return [dialled, peer];
}

/** A link each way between every two ranks of `worldSize`, as the mesh builds them: `send[p]` to p, `receive[p]` from p. */
export async function engineLinks(worldSize: number): Promise<{ send: (Socket | undefined)[]; receive: (Socket | undefined)[] }[]> {
  const ranks = Array.from({ length: worldSize }, () => ({ send: Array<Socket | undefined>(worldSize).fill(undefined), receive: Array<Socket | undefined>(worldSize).fill(undefined) }));
  for (let from = 0; from < worldSize; from++) {
    for (let to = 0; to < worldSize; to++) {
      if (from === to) continue;
      // The receiver dials; both ends stop reading in Node, as the mesh hands them over.
      const [dialled, accepted] = await loopbackPair();
      ranks[to]!.receive[from] = new FrameChannel(dialled).handOver();
      ranks[from]!.send[to] = new FrameChannel(accepted).handOver();
    }
  }
  return ranks;
}

export const concat = (...parts: Uint8Array[]) => concatBytes(parts);

/** The peer's next `bytes` received bytes (every byte it receives goes to one read, in order). */
export function reader(peer: Socket): (bytes: number) => Promise<Uint8Array> {
  let held: Uint8Array = new Uint8Array(0);
  let waiting: { bytes: number; resolve: (bytes: Uint8Array) => void } | null = null;
  const settle = () => {
    if (waiting === null || held.length < waiting.bytes) return;
    const { bytes, resolve } = waiting;
    waiting = null;
    resolve(held.slice(0, bytes));
    held = held.slice(bytes);
  };
  peer.on('data', (chunk: Buffer) => {
    held = concat(held, chunk);
    settle();
  });
  return (bytes) =>
    new Promise((resolve) => {
      waiting = { bytes, resolve };
      settle();
    });
}

/** Writes `bytes` in pieces of the given sizes (cycled), a macrotask apart: TCP may cut them anywhere. */
export async function writeInPieces(peer: Socket, bytes: Uint8Array, pieces: readonly number[]): Promise<void> {
  let offset = 0;
  for (let index = 0; offset < bytes.length; index++) {
    const size = Math.min(pieces[index % pieces.length]!, bytes.length - offset);
    if (!peer.write(bytes.subarray(offset, offset + size))) await once(peer, 'drain');
    offset += size;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

export const i32 = (values: number[]) => new Uint8Array(Int32Array.from(values).buffer);

/** An i32 sum all-reduce of `count` elements as mesh collective `sequence`, by `layout`. */
export function collectiveFor(count: number, sequence = 0n, layout = 'all-pairs', elementType = ElementType.I32): NativeCollective {
  return { number: sequence, own: descriptorOf({ opcode: Opcode.AllReduce, elementType, elementCount: count, reduceOp: 1 }, layout) };
}

/** The header a message of `collective` carries: its first message's (step 0, channel 0) unless `message` says which. */
export function headerOf(collective: NativeCollective, message: { step: number; channel?: number; stripe?: number } = { step: 0 }): Uint8Array {
  const header = encodeLinkHeader({ descriptor: collective.own, sequence: collective.number }, new Uint8Array(DESCRIPTOR_BYTES));
  return labelledHeader(header, messageLabel({ channel: 0, ...message }));
}

/** What a schedule is written from, for rank `rank` of `worldSize`: i32 sum unless said. */
export function inputOf(rank: number, worldSize: number, count: number, changes: Partial<ScheduleInput> = {}): ScheduleInput {
  return { rank, worldSize, count, width: 4, op: 'sum', root: null, ringOrder: Array.from({ length: worldSize }, (_, r) => r), ringChannels: 1, inPlace: false, ...changes };
}

/** Compiles `write`'s schedule for `input` (with the plane's header exchange) and runs it over `memory`. */
export function runOn(plane: DataPlane, write: ScheduleOf, input: ScheduleInput, memory: { input: Uint8Array; output: Uint8Array }, collective: NativeCollective, timeoutMs = 5_000) {
  const program = plane.program(JSON.stringify(input) + write.name, () => encodeProgram(withHeaderExchange((rank) => write({ ...input, rank }), input.worldSize, input.rank), ElementType.I32));
  return firstValueFrom(plane.run(program, memory.input, memory.output, { descriptor: collective.own, sequence: collective.number, timeoutMs }));
}

