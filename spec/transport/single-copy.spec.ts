/**
 * Single copy between ranks of one host (native/single_copy.h; docs/protocol.md 9.9, "Single
 * copy"): engines whose links start with the agreement read each other's large payloads straight
 * from memory, and every schedule is still right, whichever ranks turned it off; the agreement on
 * the wire against a peer played here (the sender's offer first, naming where it will hold the
 * challenge; the receiver's fresh challenge only then, echoed once held; a large payload as a range
 * held until answered, inline where refused); a sender whose offer names another process of this
 * user (real ones: one holding the challenge, a node process blind at its ELF header) is answered 0
 * and none of that process's bytes arrive; and a sender whose offer or range is bad ends the
 * collective naming it, the receiving memory untouched. The engines all live in this process, so
 * a range reads this process's memory, through the same system call as between processes.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { Socket } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { pairwiseAllReduce } from '../../lib/collectives/all-reduce/pairwise.js';
import { ringAllReduce } from '../../lib/collectives/all-reduce/ring.js';
import { chainBroadcast } from '../../lib/collectives/broadcast/chain.js';
import { pairwiseBroadcast } from '../../lib/collectives/broadcast/pairwise.js';
import { descriptorOf } from '../../lib/collectives/descriptor.js';
import { HEADER_ONLY, withHeaderExchange } from '../../lib/collectives/schedule/header-exchange.js';
import type { NativeCollective } from '../../lib/collectives/schedule/plane-executor.js';
import type { ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { resolveSingleCopy } from '../../lib/session/data-plane-setting.js';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { DataPlane } from '../../lib/transport/data-plane.js';
import { FrameChannel } from '../../lib/transport/frame-channel.js';
import { memoryVictim, readProcessMemory, selfReads } from '../helpers/cross-memory.js';
import { concat, engineLinks, headerOf, i32, inputOf, loopbackPair, reader, runOn } from '../helpers/data-plane-peer.js';
import { CHALLENGE_BYTES, OFFER_BYTES, forgedOffer, offerOfNothing, probeOf } from '../helpers/single-copy-offer.js';
import { readSettings } from '../../lib/settings/read-settings.js';

const engine = dataPlaneEngine();
const available = engine !== null;
const reason = available ? '' : ' (skipped: the native addon is not built here)';
if (!available) console.warn('spec/transport/single-copy.spec.ts: skipped: the native addon is not built here');
// An engine reads a peer's ranges only where the system lets a process read memory so.
const reads = selfReads();
const readsReason = reads.allowed ? '' : ` (skipped: ${reads.reason})`;
if (available && !reads.allowed) console.warn(`spec/transport/single-copy.spec.ts: the tests of a reading engine are skipped: ${reads.reason}`);

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const RANGE_BYTES = 16;
/** The smallest payload that goes by single copy (native/single_copy.h kSingleCopyBytes). */
const SINGLE_COPY_BYTES = 256 * 1024;

/** `worldSize` engines on one host, rank r taking part in single copy where `singleCopy[r]`. */
async function planesOnOneHost(singleCopy: readonly boolean[]): Promise<DataPlane[]> {
  const worldSize = singleCopy.length;
  const sockets = await engineLinks(worldSize);
  const planes = sockets.map(({ send, receive }, rank) =>
    DataPlane.open(engine!, rank, worldSize, { rails: 1, send, receive }, { sameHost: Array.from({ length: worldSize }, (_, r) => r).filter((r) => r !== rank), singleCopy: singleCopy[rank] }),
  );
  cleanups.push(() => {
    for (const plane of planes) plane.close();
  });
  return planes;
}

/** An engine as rank 0 of 2 whose peer (rank 1, on its host) is played here over a link each way. */
async function engineAndSameHostPeer(): Promise<{ plane: DataPlane; toPeer: Socket; fromPeer: Socket }> {
  const [dialled, peerSends] = await loopbackPair();
  const [peerReceives, accepted] = await loopbackPair();
  const receive = new FrameChannel(dialled).handOver();
  const send = new FrameChannel(accepted).handOver();
  const plane = DataPlane.open(engine!, 0, 2, { rails: 1, send: [undefined, send], receive: [undefined, receive] }, { sameHost: [1], sharedMemory: false });
  cleanups.push(() => {
    plane.close();
    peerSends.destroy();
    peerReceives.destroy();
  });
  // `toPeer`: where the peer reads this rank's data and writes its answers; `fromPeer`: where it
  // writes its own data and reads this rank's answers.
  return { plane, toPeer: peerReceives, fromPeer: peerSends };
}

const broadcastOf = (count: number, root: number, sequence = 0n): NativeCollective => ({
  number: sequence,
  own: descriptorOf({ opcode: Opcode.Broadcast, elementType: ElementType.I32, elementCount: count, rootRank: root }, 'pairwise'),
});

/**
 * Plays the peer's side of the agreement on the engine's sending link, once a collective runs (the
 * engine echoes within one): takes its offer, challenges it (a fresh challenge), takes its echo and
 * answers `answer`.
 */
async function answerEngineOffer(toPeer: Socket, fromRank: (bytes: number) => Promise<Uint8Array>, answer: number): Promise<void> {
  await fromRank(OFFER_BYTES);
  toPeer.write(randomBytes(CHALLENGE_BYTES));
  await fromRank(CHALLENGE_BYTES);
  toPeer.write(Uint8Array.of(answer));
}

const u64 = (bytes: Uint8Array, at: number) => Buffer.from(bytes).readBigUInt64LE(at);

describe.skipIf(!available)(`single copy between the native data plane's engines of one host${reason}`, () => {
  it.skipIf(!reads.allowed)(`every schedule is right with single copy, and without it on any rank; a link reads in place exactly where both its ends take part${readsReason}`, async () => {
    const schedules: [string, ScheduleOf, 'all-reduce' | 'broadcast'][] = [
      ['pairwise all-reduce', pairwiseAllReduce, 'all-reduce'],
      ['ring all-reduce', ringAllReduce, 'all-reduce'],
      ['pairwise broadcast', pairwiseBroadcast, 'broadcast'],
      ['chain broadcast', chainBroadcast, 'broadcast'],
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.boolean(), { minLength: 2, maxLength: 3 }),
        fc.constantFrom(...schedules),
        // Below and above the single-copy size, per message (a ring's segment is a third of it).
        fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 200_000, max: 300_000 })),
        fc.nat(),
        async (singleCopy, [name, write, kind], count, rootSeed) => {
          const worldSize = singleCopy.length;
          const planes = await planesOnOneHost(singleCopy);
          const root = kind === 'broadcast' ? rootSeed % worldSize : null;
          const collective: NativeCollective =
            kind === 'broadcast' ? broadcastOf(count, root!) : { number: 0n, own: descriptorOf({ opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: count, reduceOp: 1 }, name) };
          const inputs = planes.map((_, rank) => i32(Array.from({ length: count }, (_, i) => (rank + 1) * i - 7 * rank)));
          const outputs = planes.map(() => new Uint8Array(count * 4));
          const outcomes = await Promise.all(
            planes.map((plane, rank) => runOn(plane, write, inputOf(rank, worldSize, count, { root }), { input: inputs[rank]!, output: outputs[rank]! }, collective, 20_000)),
          );
          expect(outcomes).toEqual(planes.map(() => undefined));
          const expected =
            kind === 'broadcast'
              ? new Int32Array(inputs[root!]!.buffer)
              : Int32Array.from({ length: count }, (_, i) => inputs.reduce((sum, input) => sum + new Int32Array(input.buffer)[i]!, 0));
          for (const [rank, output] of outputs.entries()) {
            // The first wrong element, not a diff of 300,000.
            const got = new Int32Array(output.buffer);
            const wrong = got.findIndex((value, i) => value !== expected[i]);
            if (rank !== root) expect(wrong === -1 ? null : `element ${wrong}: ${got[wrong]}, expected ${expected[wrong]}`, `${name}, ${count} elements, rank ${rank}`).toBeNull();
          }
          // Every link a message took (the schedule's, and the headers alone of the agreement on the
          // ring) is agreed, to single copy where both ends take part.
          for (const [rank, plane] of planes.entries()) {
            const headed = withHeaderExchange((of) => write(inputOf(of, worldSize, count, { root })), worldSize, rank);
            const both = (peers: readonly number[]) => [...new Set(peers)].filter((peer) => singleCopy[rank] && singleCopy[peer]).sort((a, b) => a - b);
            expect(plane.singleCopyPeers()).toEqual({ readBy: both(headed.sends.map(({ peer }) => peer)), readsFrom: both(headed.receives.map(({ peer }) => peer)) });
          }
          await cleanups.pop()!();
        },
      ),
      { numRuns: 24 },
    );
  }, 120_000);

  it('the agreement on the wire: a sender offers first, naming where it will hold the challenge; a receiver challenges only then, freshly; the sender echoes the challenge once it holds it there; it holds a large payload as a range of its memory until the receiver answers it, and sends it inline where the receiver refused', async () => {
    const challenges = new Set<string>();
    for (const peerReads of [true, false]) {
      const { plane, toPeer, fromPeer } = await engineAndSameHostPeer();
      const fromRank = reader(toPeer);
      const answers = reader(fromPeer);
      // The offer, the link's first bytes at once: who and where this process is, and where it will
      // hold the challenge.
      const offer = await fromRank(OFFER_BYTES);
      expect(Array.from(offer.subarray(0, 8))).toEqual([0x47, 0x58, 0x31, 0x43, 2, 1, 0, 0]);
      expect(Buffer.from(offer.subarray(8, 24)).toString('hex')).toBe(readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().replaceAll('-', ''));
      expect(u64(offer, 24)).toBe(statSync('/proc/self/ns/net', { bigint: true }).ino);
      expect(Buffer.from(offer).readUInt32LE(32)).toBe(process.pid);
      expect(Array.from(offer.subarray(36, 40))).toEqual([0, 0, 0, 0]);
      const count = SINGLE_COPY_BYTES / 4;
      const values = Array.from({ length: count }, (_, i) => i * 5 - 3);
      const collective = broadcastOf(count, 0);
      let done = false;
      const outcome = runOn(plane, pairwiseBroadcast, inputOf(0, 2, count, { root: 0 }), { input: i32(values), output: new Uint8Array(count * 4) }, collective).then((ended) => {
        done = true;
        return ended;
      });
      // Challenged, the engine (in its collective) holds the challenge where it said, and echoes it.
      const challenge = randomBytes(CHALLENGE_BYTES);
      toPeer.write(challenge);
      expect(Buffer.from(await fromRank(CHALLENGE_BYTES)).equals(challenge), 'the echo').toBe(true);
      if (reads.allowed) expect(readProcessMemory(process.pid, u64(offer, 40), CHALLENGE_BYTES), 'the memory the offer names: the challenge complemented').toEqual(probeOf(challenge));
      toPeer.write(Uint8Array.of(peerReads ? 1 : 0));
      // As the peer's receiver, the engine writes nothing before the peer's offer: then a fresh
      // challenge, even to an offer of nothing, and after the echo its answer, before it reads a header.
      expect(fromPeer.bytesRead, 'bytes from the receiving engine before an offer').toBe(0);
      fromPeer.write(offerOfNothing());
      const engineChallenge = await answers(CHALLENGE_BYTES);
      challenges.add(Buffer.from(engineChallenge).toString('hex'));
      fromPeer.write(concat(engineChallenge, headerOf(collective, HEADER_ONLY)));
      expect(Array.from(await answers(1))).toEqual([0]);
      if (peerReads) {
        const message = await fromRank(32 + RANGE_BYTES);
        // docs/protocol.md 9.9's example: the header, then one range of the whole payload.
        expect(Buffer.from(message.subarray(0, 32)).toString('hex')).toBe('06060000000000000000010000000000e9c16d8224cd68d20000000001000000');
        expect(u64(message, 32)).not.toBe(0n);
        expect(u64(message, 40)).toBe(BigInt(count * 4));
        // Its memory is the receiver's to read until answered: the collective waits for that.
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(done).toBe(false);
        toPeer.write(Uint8Array.of(1));
      } else {
        expect(Buffer.from(await fromRank(32 + count * 4)).equals(concat(headerOf(collective, { step: 1 }), i32(values))), 'header and payload inline').toBe(true);
      }
      expect(await outcome).toBeUndefined();
      expect(plane.singleCopyPeers()).toEqual({ readBy: peerReads ? [1] : [], readsFrom: [] });
      await cleanups.pop()!();
    }
    expect(challenges.size, 'distinct challenges').toBe(2);
  });

  it('a receiver that took a range and never answers it is named as missing when the sender times out', async () => {
    const { plane, toPeer, fromPeer } = await engineAndSameHostPeer();
    const fromRank = reader(toPeer);
    const count = SINGLE_COPY_BYTES / 4;
    const collective = broadcastOf(count, 0);
    const outcome = runOn(plane, pairwiseBroadcast, inputOf(0, 2, count, { root: 0 }), { input: new Uint8Array(count * 4), output: new Uint8Array(count * 4) }, collective, 1_000);
    await answerEngineOffer(toPeer, fromRank, 1);
    const answers = reader(fromPeer);
    fromPeer.write(offerOfNothing());
    fromPeer.write(concat(await answers(CHALLENGE_BYTES), headerOf(collective, HEADER_ONLY)));
    // Every message went, and came: only the answer to the range is missing.
    await fromRank(32 + RANGE_BYTES);
    expect(await outcome).toMatchObject({ kind: 'timed-out', missing: [1] });
  });

  it.skipIf(!reads.allowed)(`a sender whose offer is malformed, or whose range overruns its payload or points at no memory, ends the collective naming it, the receiving memory untouched${readsReason}`, async () => {
    const count = SINGLE_COPY_BYTES / 4;
    // How the peer changes the engine's own offer before sending it back, and what it sends after
    // the agreement (null: the engine fails at the offer).
    const cases: [string, (offer: Uint8Array) => Uint8Array, ((header: Uint8Array) => Uint8Array) | null, string][] = [
      ['a malformed offer', (offer) => Uint8Array.from(offer, (byte, i) => (i < 8 ? 0x58 : byte)), null, 'single-copy offer expected, got 5858585858585858'],
      ['an offer with a reserved byte set', (offer) => Uint8Array.from(offer, (byte, i) => (i === 37 ? 1 : byte)), null, 'single-copy offer whose bytes 6..7, or 36..39 without a ring, are not zero'],
      ['a range past the payload', (offer) => offer, (header) => concat(header, range(1n, count * 4 + 4)), `single-copy range of ${count * 4 + 4} bytes where ${count * 4} bytes of the payload are left`],
      ['an empty range', (offer) => offer, (header) => concat(header, range(1n, 0)), `single-copy range of 0 bytes where ${count * 4} bytes of the payload are left`],
      ['a range at no memory', (offer) => offer, (header) => concat(header, range(8n, count * 4)), 'process_vm_readv: Bad address'],
    ];
    for (const [what, offerOf, after, text] of cases) {
      const { plane, toPeer, fromPeer } = await engineAndSameHostPeer();
      const fromRank = reader(toPeer);
      const answers = reader(fromPeer);
      const offer = await fromRank(OFFER_BYTES);
      const collective = broadcastOf(count, 1);
      const output = new Uint8Array(count * 4).fill(0xee);
      const outcome = runOn(plane, pairwiseBroadcast, inputOf(0, 2, count, { root: 1 }), { input: new Uint8Array(0), output }, collective);
      // The engine's own offer, sent back: it names memory of this very process, which holds the
      // peer's sockets too. The engine's challenge to it goes back to the engine as the peer's, so
      // that memory holds it once the engine echoes it: then the engine verifies its own offer and
      // reads the "peer's" ranges from this process.
      fromPeer.write(offerOf(offer));
      if (after !== null) {
        const challenge = await answers(CHALLENGE_BYTES);
        toPeer.write(challenge);
        await fromRank(CHALLENGE_BYTES);
        toPeer.write(Uint8Array.of(0));
        fromPeer.write(challenge);
        expect(Array.from(await answers(1)), `${what}: the engine's answer`).toEqual([1]);
        fromPeer.write(after(headerOf(collective, { step: 1 })));
      }
      const ended = await outcome;
      expect(ended, what).toMatchObject({ kind: 'system', peer: 1, what: text });
      expect(output.every((byte) => byte === 0xee), what).toBe(true);
      await cleanups.pop()!();
    }
  });

  it.skipIf(!reads.allowed)(`a sender whose offer names another process of this user, one holding the challenge at a known address or a node process blind at its ELF header (0x400000), is answered 0: not a byte of that process reaches the receiver${readsReason}`, async (context) => {
    const secret = Buffer.from(`a victim's secret, for no rank to read: ${randomBytes(16).toString('hex')}`);
    const victim = await memoryVictim(secret);
    if (victim === null) context.skip('no python3 here to play a process that holds the challenge');
    const node = spawn(process.execPath, ['-e', 'setInterval(() => {}, 60_000)'], { stdio: 'ignore' });
    cleanups.push(() => {
      victim!.kill();
      node.kill();
    });
    // Both are this user's and readable from here: only the checks of the offer keep them out.
    expect(readProcessMemory(victim!.pid, victim!.secret, secret.length), 'the victim read from here').toEqual(Uint8Array.from(secret));
    const count = SINGLE_COPY_BYTES / 4;
    // The forged offer, and what the forger does with the engine's challenge before it echoes it.
    const cases: [string, Uint8Array, (challenge: Uint8Array) => Promise<void>][] = [
      // The forger knows the challenge, and has the victim hold it where the offer says: the victim
      // does not hold the link's socket.
      [
        'a process holding the challenge',
        forgedOffer(victim!.pid, victim!.probe),
        async (challenge) => {
          await victim!.hold(probeOf(challenge));
          expect(readProcessMemory(victim!.pid, victim!.probe, CHALLENGE_BYTES), 'the probe where the offer says').toEqual(probeOf(challenge));
        },
      ],
      // node is not position-independent here: its ELF header is at 0x400000, nothing to know of it.
      ['a node process at its ELF header', forgedOffer(node.pid!, 0x400000n), async () => undefined],
    ];
    for (const [what, offer, hold] of cases) {
      const { plane, toPeer, fromPeer } = await engineAndSameHostPeer();
      const fromRank = reader(toPeer);
      const answers = reader(fromPeer);
      const collective = broadcastOf(count, 1);
      const output = new Uint8Array(count * 4).fill(0xee);
      const outcome = runOn(plane, pairwiseBroadcast, inputOf(0, 2, count, { root: 1 }), { input: new Uint8Array(0), output }, collective);
      await answerEngineOffer(toPeer, fromRank, 0);
      fromPeer.write(offer);
      const challenge = await answers(CHALLENGE_BYTES);
      await hold(challenge);
      fromPeer.write(challenge);
      expect(Array.from(await answers(1)), what).toEqual([0]);
      // Refused, the forger sends a range of the victim's secret all the same: the receiver takes it
      // for the inline payload bytes it is.
      const payload = new Uint8Array(count * 4);
      payload.set(range(victim!.secret, secret.length));
      fromPeer.write(concat(headerOf(collective, { step: 1 }), payload));
      expect(await outcome, what).toBeUndefined();
      expect(Buffer.from(output).equals(payload), `${what}: the receiver's tensor is the payload sent`).toBe(true);
      expect(plane.singleCopyPeers(), what).toEqual({ readBy: [], readsFrom: [] });
      await cleanups.pop()!();
    }
  });
});

/** A range record: `size` bytes at `address`. */
function range(address: bigint, size: number): Uint8Array {
  const record = Buffer.alloc(RANGE_BYTES);
  record.writeBigUInt64LE(address, 0);
  record.writeBigUInt64LE(BigInt(size), 8);
  return record;
}

describe('the single-copy setting', () => {
  it('singleCopy wins over GX1_SINGLE_COPY, else auto; anything but auto and off is refused by name', () => {
    // GX1_SINGLE_COPY as the settings read it: `auto` where unset or blank.
    const variable = (text?: string) => readSettings(text === undefined ? {} : { GX1_SINGLE_COPY: text }).GX1_SINGLE_COPY;
    expect(resolveSingleCopy(undefined, variable())).toBe('auto');
    expect(resolveSingleCopy(undefined, variable(' '))).toBe('auto');
    expect(resolveSingleCopy(undefined, variable(' off '))).toBe('off');
    expect(resolveSingleCopy('auto', variable('off'))).toBe('auto');
    expect(() => resolveSingleCopy(undefined, variable('no'))).toThrow('GX1_SINGLE_COPY must be one of auto, off, got "no"');
    expect(() => resolveSingleCopy('on', variable())).toThrow('singleCopy must be one of auto, off, got "on"');
    const options = { coordinator: '127.0.0.1:1', uniqueId: '00'.repeat(16), rank: 0, worldSize: 2 };
    expect(resolveSessionOptions(options, { GX1_SINGLE_COPY: 'off' }).singleCopy).toBe('off');
    expect(resolveSessionOptions({ ...options, singleCopy: 'off' }, {}).singleCopy).toBe('off');
    expect(resolveSessionOptions(options, {}).singleCopy).toBe('auto');
  });
});
