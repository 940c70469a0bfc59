/**
 * The native data plane's engine (native/data_links.cc through lib/transport/data-plane.ts), an
 * executor of schedules, as rank 0 of 2 (or 1 of 3, for a relay), against peers played here over
 * real loopback connections: what it sends for a schedule, that it reads the peer's bytes however
 * TCP cuts them, how each failure ends a collective (a wrong header before its payload is read, a
 * peer that leaves, silence past the timeout, the session's end) with the error `settleNative`
 * makes of it, and that it refuses a malformed program by name.
 */
import type { Socket } from 'node:net';
import fc from 'fast-check';
import { asyncScheduler, firstValueFrom, lastValueFrom, type SchedulerLike, VirtualTimeScheduler } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { CollectiveContext } from '../../lib/collectives/algorithm.js';
import { allPairsAllReduce } from '../../lib/collectives/all-reduce/all-pairs.js';
import { pairwiseAllReduce } from '../../lib/collectives/all-reduce/pairwise.js';
import { chainBroadcast } from '../../lib/collectives/broadcast/chain.js';
import { pairwiseBroadcast } from '../../lib/collectives/broadcast/pairwise.js';
import { pairwiseReduceScatter } from '../../lib/collectives/reduce-scatter/pairwise.js';
import { descriptorOf } from '../../lib/collectives/descriptor.js';
import { HEADER_ONLY } from '../../lib/collectives/schedule/header-exchange.js';
import { labelledHeader, messageLabel } from '../../lib/collectives/schedule/message-label.js';
import { encodeProgram, type NativeCollective, nativeCollective, settleNative } from '../../lib/collectives/schedule/plane-executor.js';
import { PEER_LEFT_GRACE_MS } from '../../lib/transport/peer-left-error.js';
import { RemoteAbortError, ProtocolError, TimeoutError } from '../../lib/errors.js';
import { dataPlaneEngine, loadAddon } from '../../lib/kernels/addon.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { DataPlane, type NativeOutcome, PLANE_PROGRAMS } from '../../lib/transport/data-plane.js';
import { FrameChannel } from '../../lib/transport/frame-channel.js';
import { LazyDeadlines } from '../../lib/transport/lazy-deadlines.js';
import { collectiveFor, concat, headerOf, i32, inputOf, loopbackPair, reader, runOn, writeInPieces } from '../helpers/data-plane-peer.js';

const engine = dataPlaneEngine();
const available = engine !== null;
const reason = available ? '' : ' (skipped: the native addon is not built here)';
if (!available) console.warn(`spec/transport/data-plane.spec.ts: skipped: the native addon is not built here`);

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The engine as rank 0 of 2 on one loopback connection (both directions), and the peer's end of it. */
async function engineAndPeer(spin: number | 'auto' = 'auto', inline: number | 'auto' = 'auto'): Promise<{ plane: DataPlane; peer: Socket }> {
  const [dialled, peer] = await loopbackPair();
  const socket = new FrameChannel(dialled).handOver();
  const plane = DataPlane.open(engine!, 0, 2, { rails: 1, send: [undefined, socket], receive: [undefined, socket] }, { spin, inline });
  cleanups.push(() => {
    plane.close();
    peer.destroy();
  });
  return { plane, peer };
}

/** The engine as rank 1 of 3, one loopback connection (both directions) to each of the peers 0 and 2, and the peers' ends. */
async function engineBetweenPeers(): Promise<{ plane: DataPlane; peers: [Socket, Socket] }> {
  const [toZero, zero] = await loopbackPair();
  const [toTwo, two] = await loopbackPair();
  const sockets = [new FrameChannel(toZero).handOver(), undefined, new FrameChannel(toTwo).handOver()];
  const plane = DataPlane.open(engine!, 1, 3, { rails: 1, send: sockets, receive: sockets });
  cleanups.push(() => {
    plane.close();
    zero.destroy();
    two.destroy();
  });
  return { plane, peers: [zero, two] };
}

/** A context that records aborts (rank 0 of 2). */
function recordingContext(scheduler: SchedulerLike = asyncScheduler): { context: CollectiveContext; aborts: string[] } {
  const aborts: string[] = [];
  let next = 0n;
  const context = {
    rank: 0,
    worldSize: 2,
    nextMeshSequence: () => next++,
    timeoutMs: () => 5_000,
    abort: (text: string) => aborts.push(text),
    peerLost: null,
    deadlines: new LazyDeadlines(scheduler),
  } as unknown as CollectiveContext;
  return { context, aborts };
}

/** An all-pairs i32 sum all-reduce of `values` at rank 0 of 2: its outcome, and its output. */
function allReduce(plane: DataPlane, values: number[], collective: NativeCollective, timeoutMs = 5_000): { outcome: Promise<NativeOutcome | undefined>; output: Uint8Array } {
  const output = new Uint8Array(values.length * 4);
  return { outcome: runOn(plane, allPairsAllReduce, inputOf(0, 2, values.length), { input: i32(values), output }, collective, timeoutMs), output };
}

describe.skipIf(!available)(`the native data plane's engine${reason}`, () => {
  it('the all-pairs and pairwise all-reduce schedules with a peer whose bytes arrive cut anywhere: the peer gets the documented messages, rank 0 the sum', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 16_384, max: 40_000 })),
        fc.array(fc.integer({ min: 1, max: 70_000 }), { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        fc.boolean(),
        async (count, pieces, pairwise, together) => {
          const { plane, peer } = await engineAndPeer();
          const readExactly = reader(peer);
          const ours = Array.from({ length: count }, (_, i) => i * 3 - 7);
          const theirs = Array.from({ length: count }, (_, i) => 1000 - i);
          const collective = collectiveFor(count, 0n, pairwise ? 'pairwise' : 'all-pairs');
          const header = headerOf(collective);
          const output = new Uint8Array(count * 4);
          const outcome = runOn(plane, pairwise ? pairwiseAllReduce : allPairsAllReduce, inputOf(0, 2, count), { input: i32(ours), output }, collective, 10_000);
          const sum = ours.map((value, i) => value + theirs[i]!);
          if (!pairwise) {
            // One message each way: header, then the whole tensor.
            const [received] = await Promise.all([readExactly(32 + count * 4), writeInPieces(peer, concat(header, i32(theirs)), pieces)]);
            expect(received).toEqual(concat(header, i32(ours)));
          } else {
            // Rank 0 owns elements [0, ceil(count/2)), rank 1 the rest: each sends the other's part,
            // the owner sends back its reduced part.
            const half = Math.ceil(count / 2);
            const scatter = concat(header, i32(theirs.slice(0, half)));
            // Step 1's messages carry its label (docs/protocol.md 9.9).
            const gather = concat(headerOf(collective, { step: 1 }), i32(sum.slice(half)));
            // `together`: the peer's second message is in the socket with its first (a read of
            // the first must take its bytes only).
            const [scattered] = await Promise.all([readExactly(32 + (count - half) * 4), writeInPieces(peer, together ? concat(scatter, gather) : scatter, pieces)]);
            expect(scattered).toEqual(concat(header, i32(ours.slice(half))));
            const [gathered] = await Promise.all([readExactly(32 + half * 4), together ? Promise.resolve() : writeInPieces(peer, gather, pieces)]);
            expect(gathered).toEqual(concat(headerOf(collective, { step: 1 }), i32(sum.slice(0, half))));
          }
          expect(await outcome).toBeUndefined();
          expect(Array.from(new Int32Array(output.buffer))).toEqual(sum);
          await cleanups.pop()!();
        },
      ),
      { numRuns: 25 },
    );
  }, 60_000);

  it('the pairwise reduce-scatter: the peer gets its shard of ours, rank 0 the sum of its own, in place or not', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 150_000 }), fc.array(fc.integer({ min: 1, max: 70_000 }), { minLength: 1, maxLength: 4 }), fc.boolean(), async (shard, pieces, inPlace) => {
        const { plane, peer } = await engineAndPeer();
        const readExactly = reader(peer);
        const count = 2 * shard;
        const ours = Array.from({ length: count }, (_, i) => i - 5);
        const theirs = Array.from({ length: count }, (_, i) => 3 * i);
        const collective = { number: 0n, own: descriptorOf({ opcode: Opcode.ReduceScatter, elementType: ElementType.I32, elementCount: count, reduceOp: 1 }, 'pairwise') };
        const header = headerOf(collective);
        const input = i32(ours);
        const output = inPlace ? input.subarray(0, shard * 4) : new Uint8Array(shard * 4);
        const outcome = runOn(plane, pairwiseReduceScatter, inputOf(0, 2, count, { inPlace }), { input, output }, collective, 10_000);
        const [sent] = await Promise.all([readExactly(32 + shard * 4), writeInPieces(peer, concat(header, i32(theirs.slice(0, shard))), pieces)]);
        expect(Buffer.compare(sent, concat(header, i32(ours.slice(shard))))).toBe(0);
        expect(await outcome).toBeUndefined();
        expect(Array.from(new Int32Array(output.buffer, output.byteOffset, shard))).toEqual(ours.slice(0, shard).map((value, i) => value + theirs[i]!));
        await cleanups.pop()!();
      }),
      { numRuns: 10 },
    );
  }, 60_000);

  it('builds the headers docs/protocol.md 9.9 shows: AllReduce of 2 f32 with sum (all-pairs), and Broadcast of 2 f32 from root 0 (pairwise), as mesh collective 5', () => {
    expect(Buffer.from(headerOf(collectiveFor(2, 5n, 'all-pairs', ElementType.F32))).toString('hex')).toBe('0b0b0100ffffffff0200000000000000f8cdd01431466a340500000000000000');
    const broadcast = { number: 5n, own: descriptorOf({ opcode: Opcode.Broadcast, elementType: ElementType.F32, elementCount: 2, rootRank: 0 }, 'pairwise') };
    expect(Buffer.from(headerOf(broadcast)).toString('hex')).toBe('060b0000000000000200000000000000e9c16d8224cd68d20500000000000000');
  });

  it('builds the header exchange headers docs/protocol.md 9.9 shows for collectives agreed at the coordinator, as mesh collective 5: the root as requested, the layout "coordinator" with a nonzero tag folded in', () => {
    const exchanged = (request: Parameters<typeof descriptorOf>[0]) => Buffer.from(headerOf({ number: 5n, own: descriptorOf(request, 'coordinator') })).toString('hex');
    expect(exchanged({ opcode: Opcode.Scatter, rootRank: 1 })).toBe('0a000000010000000000000000000000f11341978d03cd200500000000000000');
    expect(exchanged({ opcode: Opcode.AllToAllV })).toBe('0e000000ffffffff0000000000000000f11341978d03cd200500000000000000');
    // SetTimeout's milliseconds travel in its tag: layout "coordinator; 30000".
    expect(exchanged({ opcode: Opcode.SetTimeout, tag: 30000n })).toBe('05000000ffffffff00000000000000007b15175c0f8b4a2c0500000000000000');
  });

  it('the broadcast vector of docs/protocol.md 9.9 on the wire: the root sends header and tensor, and takes the peer’s header alone', async () => {
    const { plane, peer } = await engineAndPeer();
    const readExactly = reader(peer);
    const own = descriptorOf({ opcode: Opcode.Broadcast, elementType: ElementType.F32, elementCount: 2, rootRank: 0 }, 'pairwise');
    const header = '060b0000000000000200000000000000e9c16d8224cd68d205000000';
    const input = new Uint8Array(Float32Array.of(1, 2).buffer);
    const outcome = runOn(plane, pairwiseBroadcast, inputOf(0, 2, 2, { root: 0 }), { input, output: new Uint8Array(8) }, { number: 5n, own });
    // The peer sends the root nothing, so it opens their link with its header alone (the agreement),
    // labelled 0xff03ffff; the tensor is the broadcast's step 1 (label 1).
    peer.write(Buffer.from(`${header}ffff03ff`, 'hex'));
    expect(Buffer.from(await readExactly(40)).toString('hex')).toBe(`${header}010000000000803f00000040`);
    expect(await outcome).toBeUndefined();
  });

  it('a header that disagrees stops the collective before its payload is read, and names both ranks and both descriptors', async () => {
    const { plane, peer } = await engineAndPeer();
    const { context, aborts } = recordingContext();
    const collective = nativeCollective(context, { opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: 4, reduceOp: 1 }, 'all-pairs');
    const { outcome } = allReduce(plane, [1, 2, 3, 4], collective);
    // The peer says 5 elements, and sends them.
    peer.write(concat(headerOf(collectiveFor(5)), i32([1, 2, 3, 4, 5])));
    const ended = (await outcome)!;
    expect(ended.kind).toBe('mismatch');
    expect(ended.peer).toBe(1);
    expect(ended.header).toEqual(headerOf(collectiveFor(5)));
    const error = await lastValueFrom(settleNative(ended, context, collective, () => null)).catch((failure: unknown) => failure as Error);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toBe(
      'collective sequence 0 mismatch: rank 0 submitted {AllReduce I32 root ANY count 4 op sum layout "all-pairs"}, rank 1 submitted {AllReduce I32 root ANY count 5 op sum layout "all-pairs"}',
    );
    expect(aborts).toEqual([(error as Error).message]);
  });

  it('a disagreeing header leaves the memory its payload was bound for as it was, small (read whole) or large (read in place)', async () => {
    for (const count of [2, 5_000]) {
      const { plane, peer } = await engineAndPeer();
      // Rank 0 receives rank 1's broadcast straight into its output.
      const own = descriptorOf({ opcode: Opcode.Broadcast, elementType: ElementType.I32, elementCount: count, rootRank: 1 }, 'pairwise');
      const output = new Uint8Array(count * 4).fill(0xaa);
      const outcome = runOn(plane, pairwiseBroadcast, inputOf(0, 2, count, { root: 1 }), { input: new Uint8Array(0), output }, { number: 0n, own });
      const theirs = { number: 0n, own: descriptorOf({ opcode: Opcode.Broadcast, elementType: ElementType.I32, elementCount: count, rootRank: 0 }, 'pairwise') };
      peer.write(concat(headerOf(theirs), new Uint8Array(count * 4)));
      expect((await outcome)!.kind).toBe('mismatch');
      expect(output.every((byte) => byte === 0xaa)).toBe(true);
      await cleanups.pop()!();
    }
  });

  it('a header of another collective number, or a corrupt one, is named as such', async () => {
    for (const [theirs, expected] of [
      [headerOf(collectiveFor(4, 7n)), 'rank 1 sent mesh collective 7 where rank 0 is at 0'],
      [(() => { const bytes = headerOf(collectiveFor(4)); bytes[3] = 9; return bytes; })(), 'collective header byte 3 is 9, expected 0'],
    ] as const) {
      const { plane, peer } = await engineAndPeer();
      const { context } = recordingContext();
      const collective = nativeCollective(context, { opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: 4, reduceOp: 1 }, 'all-pairs');
      const { outcome } = allReduce(plane, [1, 2, 3, 4], collective);
      peer.write(theirs);
      const error = await lastValueFrom(settleNative(await outcome, context, collective, () => null)).catch((failure: unknown) => failure as Error);
      expect((error as Error).message).toBe(expected);
    }
  });

  it('a message of the right collective sent out of order (its step 1 before its step 0) is a PROTOCOL error naming the link and both labels, its payload never read', async () => {
    const { plane, peer } = await engineAndPeer();
    const { context, aborts } = recordingContext();
    const collective = nativeCollective(context, { opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: 4, reduceOp: 1 }, 'pairwise');
    // A pairwise all-reduce of 4 elements at 2 ranks: step 0 (the peer's values of rank 0's half)
    // and step 1 (the peer's reduced half) are 8 bytes each, so without labels step 1's values
    // would be folded as step 0's.
    const output = new Uint8Array(16).fill(0xaa);
    const outcome = runOn(plane, pairwiseAllReduce, inputOf(0, 2, 4), { input: i32([1, 2, 3, 4]), output }, collective);
    peer.write(concat(headerOf(collective, { step: 1 }), i32([30, 40]), headerOf(collective), i32([10, 20])));
    const ended = (await outcome)!;
    expect(ended).toMatchObject({ kind: 'mismatch', peer: 1, rail: 0, label: 0 });
    expect(output.every((byte) => byte === 0xaa)).toBe(true);
    const error = await lastValueFrom(settleNative(ended, context, collective, () => null)).catch((failure: unknown) => failure as Error);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).code).toBe('PROTOCOL');
    expect((error as Error).message).toBe(
      'rank 1 sent collective 0 (AllReduce) message step 1 channel 0 stripe 0 on its data link to rank 0, where rank 0 expects message step 0 channel 0 stripe 0',
    );
    expect(aborts).toEqual([(error as Error).message]);
  });

  it('a peer that closes mid-payload ends the collective naming it', async () => {
    const { plane, peer } = await engineAndPeer();
    const { context, aborts } = recordingContext();
    const collective = nativeCollective(context, { opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: 1000, reduceOp: 1 }, 'all-pairs');
    const { outcome } = allReduce(plane, new Array(1000).fill(1), collective);
    peer.end(concat(headerOf(collective), new Uint8Array(100)));
    const ended = (await outcome)!;
    expect(ended.kind).toBe('peer-closed');
    expect(ended.peer).toBe(1);
    const error = await lastValueFrom(settleNative(ended, context, collective, () => null)).catch((failure: unknown) => failure as Error);
    expect(error).toBeInstanceOf(RemoteAbortError);
    expect((error as Error).message).toBe('direct peer rank 1 left');
    expect(aborts).toHaveLength(1);
  });

  it(`blames a peer that left only after ${PEER_LEFT_GRACE_MS} ms, and not at all when the session fails first (its Abort names the rank that died)`, () => {
    const scheduler = new VirtualTimeScheduler();
    const { context, aborts } = recordingContext(scheduler);
    const left: NativeOutcome = { kind: 'peer-closed', peer: 1, what: '' } as NativeOutcome;
    const collective = collectiveFor(4);
    // The session failed meanwhile: its failure ends the collective, which unsubscribes.
    const overtaken = settleNative(left, context, collective, () => null).subscribe({ error: () => expect.fail('blamed the peer after the session failed') });
    overtaken.unsubscribe();
    let blamed: { error: Error; at: number } | null = null;
    settleNative(left, context, collective, () => null).subscribe({ error: (error: Error) => (blamed = { error, at: scheduler.now() }) });
    expect(blamed).toBeNull();
    scheduler.flush();
    expect(blamed!.at).toBe(PEER_LEFT_GRACE_MS);
    expect(blamed!.error.message).toBe('direct peer rank 1 left');
    expect(aborts).toEqual(['direct peer rank 1 left']);
  });

  it('in a fault-tolerant job, a peer that left is lost (no abort): the session failure it brings ends the collective', () => {
    const scheduler = new VirtualTimeScheduler();
    const { context, aborts } = recordingContext(scheduler);
    const lost: [number, string][] = [];
    const tolerant = { ...context, peerLost: (peer: number, reason: string) => lost.push([peer, reason]) };
    const left: NativeOutcome = { kind: 'peer-closed', peer: 1, what: 'recv: Connection reset by peer' } as NativeOutcome;
    const ended: unknown[] = [];
    settleNative(left, tolerant, collectiveFor(4), () => null).subscribe({ next: (value) => ended.push(value), error: (error) => ended.push(error), complete: () => ended.push('complete') });
    scheduler.flush();
    expect(lost).toEqual([[1, 'its native data link closed while rank 0 needed it (recv: Connection reset by peer)']]);
    expect(ended).toEqual([]);
    expect(aborts).toEqual([]);
  });

  it('a silent peer: the collective times out after its timeout, naming it as missing', async () => {
    const { plane } = await engineAndPeer();
    const { context } = recordingContext();
    const collective = nativeCollective(context, { opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: 2, reduceOp: 1 }, 'all-pairs');
    const started = performance.now();
    const ended = (await allReduce(plane, [1, 2], collective, 300).outcome)!;
    const elapsed = performance.now() - started;
    expect(ended.kind).toBe('timed-out');
    expect(ended.missing).toEqual([1]);
    expect(elapsed).toBeGreaterThanOrEqual(295);
    expect(elapsed).toBeLessThan(2_000);
    const error = await lastValueFrom(settleNative(ended, context, collective, () => null)).catch((failure: unknown) => failure as Error);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as Error).message).toContain('rank 0 collective 0 (AllReduce) on the native data plane; missing ranks [1]');
  });

  it("says which peers a collective waits for while it waits on the engine's thread (refreshed every second), and none once it ended", async () => {
    const { plane } = await engineAndPeer();
    const { context } = recordingContext();
    const collective = nativeCollective(context, { opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: 2, reduceOp: 1 }, 'all-pairs');
    expect(plane.waitingFor()).toEqual([]);
    const { outcome } = allReduce(plane, [1, 2], collective, 2_500);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(plane.waitingFor()).toEqual([1]);
    expect(await outcome).toMatchObject({ kind: 'timed-out', missing: [1] });
    expect(plane.waitingFor()).toEqual([]);
  });

  it('names as waited for only a peer that moved none of its bytes in the last second: one sending a large message slowly is not', async () => {
    const { plane, peer } = await engineAndPeer();
    const { context } = recordingContext();
    const count = 16_384;
    const collective = nativeCollective(context, { opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: count, reduceOp: 1 }, 'all-pairs');
    const { outcome } = allReduce(plane, new Array(count).fill(1), collective, 10_000);
    const message = concat(headerOf(collective), i32(new Array(count).fill(2)));
    // A byte every 50 ms for 2.5 s: always moving, never done.
    let sent = 0;
    const trickle = setInterval(() => peer.write(message.subarray(sent, ++sent)), 50);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(plane.waitingFor(), 'a peer moving bytes').toEqual([]);
    clearInterval(trickle);
    await new Promise((resolve) => setTimeout(resolve, 2_200));
    expect(plane.waitingFor(), 'the same peer, silent since').toEqual([1]);
    peer.write(message.subarray(sent));
    expect(await outcome).toBeUndefined();
  });

  it('end() wakes a collective waiting on a silent peer in under 1 s; later ones end at once, sending nothing; settleNative leaves the error to the session', async () => {
    const { plane, peer } = await engineAndPeer();
    let arrived = 0;
    peer.on('data', (chunk: Buffer) => (arrived += chunk.length));
    const { context, aborts } = recordingContext();
    const collective = nativeCollective(context, { opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: 2, reduceOp: 1 }, 'all-pairs');
    const { outcome } = allReduce(plane, [1, 2], collective, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    plane.end();
    const ended = (await outcome)!;
    expect(ended.kind).toBe('aborted');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect((await allReduce(plane, [1, 2], collective, 60_000).outcome)?.kind).toBe('aborted');
    // The peer got the first collective's message (header and 2 i32) and nothing of the later one.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(arrived).toBe(32 + 8);
    // Nothing is emitted and nothing announced: the session's own failure ends the collective.
    let emitted = false;
    settleNative(ended, context, collective, () => null).subscribe({ next: () => (emitted = true), error: () => (emitted = true), complete: () => (emitted = true) }).unsubscribe();
    expect(emitted).toBe(false);
    expect(aborts).toEqual([]);
  });

  it('a chain relays a receive to the next rank as it arrives, however TCP cuts it, opening that link with its header alone (the relay waits), and says nothing to the rest', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 700_000 }), fc.array(fc.integer({ min: 1, max: 300_000 }), { minLength: 1, maxLength: 4 }), async (bytes, pieces) => {
        const { plane, peers } = await engineBetweenPeers();
        const [zero, two] = peers;
        const fromTwo = reader(two);
        const collective = { number: 3n, own: descriptorOf({ opcode: Opcode.Broadcast, elementType: ElementType.U8, elementCount: bytes, rootRank: 0 }, 'chain 0,1,2') };
        const header = headerOf(collective);
        const payload = Uint8Array.from({ length: bytes }, (_, i) => (i * 7 + 3) & 0xff);
        const result = new Uint8Array(bytes);
        const input = inputOf(1, 3, bytes, { width: 1, op: null, root: 0 });
        const outcome = runOn(plane, chainBroadcast, input, { input: new Uint8Array(bytes), output: result }, collective, 10_000);
        // Rank 0 sends the payload; rank 2 must get it relayed, after rank 1's header alone, which
        // opens their link of the ring at once (docs/protocol.md 9.9, the agreement). Rank 2's
        // successor is rank 0: ranks 1 and 2 say nothing else to each other, nor rank 1 to rank 0.
        const [toTwo] = await Promise.all([fromTwo(64 + bytes), writeInPieces(zero, concat(header, payload), pieces)]);
        expect(Buffer.from(toTwo.subarray(0, 32))).toEqual(Buffer.from(labelledHeader(header, messageLabel(HEADER_ONLY))));
        expect(Buffer.from(toTwo.subarray(32, 64))).toEqual(Buffer.from(header));
        expect(Buffer.compare(toTwo.subarray(64), payload)).toBe(0);
        expect(await outcome).toBeUndefined();
        expect(Buffer.compare(result, payload)).toBe(0);
        await cleanups.pop()!();
      }),
      { numRuns: 15 },
    );
  }, 60_000);

  it('refuses a malformed program by name, and memory smaller than the program needs', async () => {
    const { plane } = await engineBetweenPeers();
    const compile = (numbers: number[]) => () => plane.program(String(Math.random()), () => Float64Array.from(numbers));
    // element type, scratch bytes; sends (peer, rail, label, memory, offset, bytes, gate kind, gate index); receives; folds.
    expect(compile([6, 0, 1, 1, 0, 0, 0, 0, 4, 0, 0, 0, 0])).toThrow('data plane program send peer is not another rank');
    expect(compile([6, 0, 1, 3, 0, 0, 0, 0, 4, 0, 0, 0, 0])).toThrow('data plane program send peer is not another rank');
    expect(compile([6, 0, 1, 2, 1, 0, 0, 0, 4, 0, 0, 0, 0])).toThrow("data plane program send rail is not one of the job's rails (0..0)");
    expect(compile([6, 0, 1, 2, 0, 0, 0, 0, 4, 1, 0, 0, 0])).toThrow('data plane program send waits for a producer it does not have');
    expect(compile([6, 0, 1, 2, 0, 2 ** 32, 0, 0, 4, 0, 0, 0, 0, 0])).toThrow('data plane program send label is not a 32-bit label');
    expect(compile([6, 0, 0, 1, 0, 0, 0, 2, 0, 8, 0])).toThrow('data plane program span lies outside its scratch');
    expect(compile([6, 0, 0, 0, 0, 7])).toThrow('data plane program has numbers after its last fold');
    expect(compile([6, 0, 0, 0, 1, 1, 0, 4, 1, 1, 0])).toThrow('data plane program fold has no source');
    expect(compile([11, 0, 0, 0, 1, 1, 0, 4, 6, 1, 2, 0, 0, 0, 0, 0])).toThrow('data plane program fold op is not defined on its element type');
    expect(compile([6, 0, 0, 0, 1, 1, 0, 4, 1, 1, 1, 0, 0, 1, 2, 5])).toThrow('data plane program fold waits for a producer it does not have');
    expect(compile([6, 0, 2])).toThrow('data plane program ends before its send peer');
    // A send of several producers (gate kind 4: skip, part count, (kind, index) per part): here
    // receive 0, 8 bytes, from byte 0 (fine) or 4 (short of the send's 8).
    const fromReceive = (gate: number[]) => [6, 0, 1, 2, 0, 0, 0, 0, 8, ...gate, 1, 2, 0, 0, 1, 0, 8, 0];
    expect(compile(fromReceive([4, 0, 1, 1, 0]))).not.toThrow();
    expect(compile(fromReceive([4, 4, 1, 1, 0]))).toThrow('data plane program send waits for producers of fewer bytes than it has');
    // Receive 0 twice from byte 8: enough bytes, but the first part lies wholly before them.
    expect(compile(fromReceive([4, 8, 2, 1, 0, 1, 0]))).toThrow('data plane program send waits for a first producer wholly before its bytes');
    expect(compile(fromReceive([4, 0, 1, 0, 0]))).toThrow('data plane program gate part is not a receive, fold or send (kind 1..3)');
    expect(compile(fromReceive([4, 0, 0]))).toThrow('data plane program gate of producers names none');
    expect(compile(fromReceive([5, 0]))).toThrow('data plane program gate kind is not 0..4');
    expect(() => plane.program('not numbers', () => new Float32Array(3) as unknown as Float64Array)).toThrow('data plane program must be a Float64Array');
    const program = plane.program('sends 8 bytes', () => Float64Array.from([6, 0, 1, 2, 0, 0, 0, 0, 8, 0, 0, 0, 0]));
    const call = { descriptor: collectiveFor(2).own, sequence: 0n, timeoutMs: 1_000 };
    await expect(firstValueFrom(plane.run(program, new Uint8Array(4), new Uint8Array(0), call))).rejects.toThrow('data plane input is smaller than its program reads');
  });

  it('a small collective whose peer is there runs on the calling thread: its outcome comes before the call returns, unless another plane is open in the process', async () => {
    const { plane, peer } = await engineAndPeer();
    const readExactly = reader(peer);
    const collective = collectiveFor(2);
    // The peer's message is waiting in the socket before the call.
    peer.write(concat(headerOf(collective), i32([10, 20])));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const output = new Uint8Array(8);
    let outcome: unknown = 'pending';
    const program = plane.program('all-pairs 2', () => encodeProgram(allPairsAllReduce(inputOf(0, 2, 2)), ElementType.I32));
    plane.run(program, i32([1, 2]), output, { descriptor: collective.own, sequence: 0n, timeoutMs: 5_000 }).subscribe((ended) => (outcome = ended));
    expect(outcome).toBeUndefined();
    expect(Array.from(new Int32Array(output.buffer))).toEqual([11, 22]);
    expect(await readExactly(40)).toEqual(concat(headerOf(collective), i32([1, 2])));
    // With a second plane in the process (ranks sharing it: the peer may be this very thread), the
    // engine's thread runs it: the outcome comes later, and is the same.
    const { plane: other } = await engineAndPeer();
    expect(other).toBeDefined();
    peer.write(concat(headerOf(collectiveFor(2, 1n)), i32([5, 5])));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = new Uint8Array(8);
    let later: unknown = 'pending';
    const done = new Promise<void>((resolve) =>
      plane.run(program, i32([1, 2]), second, { descriptor: collective.own, sequence: 1n, timeoutMs: 5_000 }).subscribe({ next: (ended) => (later = ended), complete: resolve }),
    );
    expect(later).toBe('pending');
    await done;
    expect(later).toBeUndefined();
    expect(Array.from(new Int32Array(second.buffer))).toEqual([6, 7]);
  });

  it("runs a small collective on the calling thread for at most its inline budget, then on the engine's thread; a budget of 0 hands it over at once", async () => {
    const program = (plane: DataPlane) => plane.program('all-pairs 2', () => encodeProgram(allPairsAllReduce(inputOf(0, 2, 2)), ElementType.I32));
    const run = (plane: DataPlane, output: Uint8Array) => {
      let outcome: unknown = 'pending';
      const ended = new Promise<void>((resolve) =>
        plane.run(program(plane), i32([1, 2]), output, { descriptor: collectiveFor(2).own, sequence: 0n, timeoutMs: 5_000 }).subscribe({ next: (value) => (outcome = value), complete: resolve }),
      );
      return { outcome: () => outcome, ended };
    };
    // A silent peer: the call holds this thread for the whole budget (40 ms), not longer, and the
    // engine's thread finishes the collective once the peer's message comes.
    const spinning = await engineAndPeer('auto', 40_000);
    const output = new Uint8Array(8);
    const started = performance.now();
    const late = run(spinning.plane, output);
    const held = performance.now() - started;
    expect(late.outcome()).toBe('pending');
    expect(held).toBeGreaterThanOrEqual(39.5);
    expect(held).toBeLessThan(40 + 2_000);
    spinning.peer.write(concat(headerOf(collectiveFor(2)), i32([10, 20])));
    await late.ended;
    expect(late.outcome()).toBeUndefined();
    expect(Array.from(new Int32Array(output.buffer))).toEqual([11, 22]);
    await cleanups.pop()!();
    // Budget 0: even with the peer's message already in the socket, the call returns before the outcome.
    const handing = await engineAndPeer('auto', 0);
    handing.peer.write(concat(headerOf(collectiveFor(2)), i32([5, 5])));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const handed = run(handing.plane, output);
    expect(handed.outcome()).toBe('pending');
    await handed.ended;
    expect(handed.outcome()).toBeUndefined();
    expect(Array.from(new Int32Array(output.buffer))).toEqual([6, 7]);
  });

  it('refuses an inline budget the engine cannot hold (NaN, negative, above 100000 us) before it takes a descriptor', () => {
    for (const inlineUs of [Number.NaN, -1, 100_001, 1e300]) {
      expect(() => new engine!(0, 1, 1, [-1], [-1], -1, [], true, undefined, true, inlineUs)).toThrow('data plane inlineUs must be a number of microseconds, 0..100000');
    }
  });

  it('waits that never spin (spin 0) or spin a fixed time still take every message, cut anywhere', async () => {
    for (const spin of [0, 300]) {
      const { plane, peer } = await engineAndPeer(spin);
      const readExactly = reader(peer);
      const collective = collectiveFor(3);
      const { outcome, output } = allReduce(plane, [1, 2, 3], collective);
      // The peer answers late, in pieces: the engine sleeps in poll() (at once with 0) and wakes for each.
      await new Promise((resolve) => setTimeout(resolve, 30));
      const [received] = await Promise.all([readExactly(32 + 12), writeInPieces(peer, concat(headerOf(collective), i32([10, 20, 30])), [5, 30, 9])]);
      expect(received).toEqual(concat(headerOf(collective), i32([1, 2, 3])));
      expect(await outcome).toBeUndefined();
      expect(Array.from(new Int32Array(output.buffer))).toEqual([11, 22, 33]);
      await cleanups.pop()!();
    }
  });

  it("spins as its budget says: fixed, or (auto) 20 ms halved by each wait of 5 ms or more with fewer than 16 waits since the last, down to 50 us, doubled by a wait that slept and ended sooner", () => {
    const trace = (spinUs: number, waitsUs: number[]) => Array.from(loadAddon().spinBudgetTrace(spinUs, Float64Array.from(waitsUs)));
    // A peer 20 ms late every call (a few short waits between): the whole spin twice, then less each call, down to 50 us.
    const lateEveryCall = Array.from({ length: 13 }, () => [20_000, 10, 30]).flat();
    expect(trace(-1, lateEveryCall).filter((_, wait) => wait % 3 === 0)).toEqual([20_000, 20_000, 10_000, 5_000, 2_500, 1_250, 625, 312.5, 156.25, 78.125, 50, 50, 50]);
    // Close arrivals (descheduled peers, a few ms) keep the whole spin, and so does a long wait now and then.
    expect(trace(-1, [10, 4_000, 300, 4_999, 20])).toEqual(Array(5).fill(20_000));
    expect(trace(-1, [6_000, ...Array(16).fill(10), 6_000, 10])).toEqual(Array(19).fill(20_000));
    // Back from late peers: a wait past the spin that still ended within 5 ms doubles it each time.
    expect(trace(-1, [...Array(10).fill(20_000), 60, 120, 250, 10])).toEqual([20_000, 20_000, 10_000, 5_000, 2_500, 1_250, 625, 312.5, 156.25, 78.125, 50, 100, 200, 400]);
    // Fixed: the same spin whatever the waits; 0 never spins.
    expect(trace(300, [20_000, 20_000, 10])).toEqual([300, 300, 300]);
    expect(trace(0, [20_000, 1])).toEqual([0, 0]);
  });

  it('refuses a second collective while one runs', async () => {
    const { plane } = await engineAndPeer();
    const collective = collectiveFor(2);
    const first = allReduce(plane, [1, 2], collective, 60_000).outcome;
    await expect(allReduce(plane, [1, 2], collective).outcome).rejects.toThrow(/running a collective already/);
    plane.end();
    await first;
  });

  it('compiles each shape once and forgets the oldest past its limit', () => {
    const engine = { compiled: 0, released: [] as number[] };
    const fake = { compile: () => engine.compiled++, release: (id: number) => engine.released.push(id), run: () => undefined, wake: () => undefined, close: () => undefined };
    const plane = DataPlane.open(function Engine() { return fake; } as never, 0, 1, { rails: 1, send: [undefined], receive: [undefined] });
    const encode = () => new Float64Array(0);
    expect(plane.program('a', encode)).toBe(0);
    expect(plane.program('a', encode)).toBe(0);
    for (let shape = 1; shape <= PLANE_PROGRAMS; shape++) plane.program(`shape ${shape}`, encode);
    expect(engine.compiled).toBe(PLANE_PROGRAMS + 1);
    expect(engine.released).toEqual([0]);
    plane.forgetPrograms();
    expect(engine.released).toHaveLength(PLANE_PROGRAMS + 1);
  });
});
