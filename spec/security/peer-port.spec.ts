/**
 * Attack 1 and 3 of issue #12 on a rank's peer port, multi-process: rank 0 runs in its own process
 * (tcp_peer, 2 ranks, loopback), rank 1 is played step by step from the test so the attacks land
 * while rank 0's peer listener is open and before the real rank 1 dials.
 *
 * - A stranger that sends garbage, an impostor that knows the unique id and says PeerHello as
 *   rank 1, one that guesses the secret, and one that declares a 1 GiB frame: each is refused,
 *   none learns the unique id, and rank 0 receives the real rank 1's value.
 * - Idle and half-header sockets on the peer port do not hold up the real peer: handshakes run in
 *   parallel, each within its own timeout (with and without a secret).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { peerHelloHeader } from '../../lib/protocol/control-frames.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { type Frame, frameText, makeHeader } from '../../lib/protocol/frame.js';
import { encodeHeader } from '../../lib/protocol/header.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { FrameChannel } from '../../lib/transport/frame-channel.js';
import { dialHandshake } from '../../lib/transport/handshake.js';
import { generateSecret } from '../../lib/transport/job-secret.js';
import { rejection } from '../helpers/job.js';
import { killAll, resultOf, spawnRank } from '../helpers/rank-process.js';
import { rawConnection, type RawOutcome } from '../helpers/raw-socket.js';
import { manualRankOne, type ManualRankOne } from './manual-rank.js';

const ZERO_ID = '0'.repeat(32);
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await killAll();
});

/** A tcp_peer coordinator, rank 0 in its own process (receiving one i32 from rank 1), rank 1 at the test's command. */
async function peerJob(secret: string | null) {
  const uniqueId = UniqueId.random();
  const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize: 2, transport: 'tcp_peer', ...(secret ? { secret } : {}) }, {});
  cleanups.push(() => coordinator.close());
  const zero = spawnRank({
    coordinator: `127.0.0.1:${coordinator.address.port}`,
    uniqueId: uniqueId.toHex(),
    rank: 0,
    worldSize: 2,
    timeoutMs: 30_000,
    // Rank 1 is played by hand, without the native data plane's links.
    env: { GX1_COLLECTIVE_TRANSPORT: 'tcp_peer', GX1_SECRET: secret ?? '', GX1_DATA_PLANE: 'js' },
    script: 'spec/security/fixtures/rank.ts',
    args: ['receive'],
  });
  const one = await manualRankOne(coordinator.address.port, uniqueId, secret === null ? null : new Uint8Array(Buffer.from(secret)));
  cleanups.push(() => one.channels.forEach((channel) => channel.destroy()));
  return { uniqueId, zero, one };
}

function stranger(one: ManualRankOne) {
  const connection = rawConnection(one.rankZero.port, 15_000);
  cleanups.push(() => connection.socket.destroy());
  return connection;
}

/** Nothing rank 0 said to a stranger carries the job's unique id, in a header or in a text. */
function expectNothingOfTheJob(outcome: RawOutcome, uniqueId: UniqueId): void {
  expect(outcome.decodeError).toBeNull();
  for (const frame of outcome.frames) {
    expect(frame.header.uniqueId.toHex()).toBe(ZERO_ID);
    expect(frameText(frame)).not.toContain(uniqueId.toHex());
  }
}

const opcodes = (frames: readonly Frame[]) => frames.map((frame) => Opcode[frame.header.opcode]);

describe("a rank's peer port, attacked while the mesh is being built", () => {
  it('refuses garbage, an impostor with the unique id, a guessed secret and a 1 GiB header; the real peer gets through', async () => {
    const secret = generateSecret();
    const { uniqueId, zero, one } = await peerJob(secret);
    // The listener is on the job's interface (loopback here), not every interface.
    expect(one.rankZero.host).toBe('127.0.0.1');

    const garbage = stranger(one);
    await garbage.connected;
    garbage.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const garbageOutcome = await garbage.outcome;
    expect(garbageOutcome.dropped).toBe(true);
    expect(opcodes(garbageOutcome.frames)).toEqual(['AuthChallenge', 'Abort']);
    expectNothingOfTheJob(garbageOutcome, uniqueId);

    // It knows the unique id (a launcher computed it from public facts) but not the secret.
    const impostor = stranger(one);
    await impostor.connected;
    impostor.socket.write(encodeHeader(peerHelloHeader({ uniqueId, rank: 1, worldSize: 2 }, 0, 0)));
    const impostorOutcome = await impostor.outcome;
    expect(opcodes(impostorOutcome.frames)).toEqual(['AuthChallenge', 'Abort']);
    expect(frameText(impostorOutcome.frames[1]!)).toMatch(/authentication required/);
    expectNothingOfTheJob(impostorOutcome, uniqueId);

    const guesser = stranger(one);
    await guesser.connected;
    const guessed = new FrameChannel(guesser.socket);
    const refused = await rejection(
      dialHandshake(guessed, { secret: new Uint8Array(Buffer.from(generateSecret())), claim: { rank: 1, worldSize: 2, peer: 0, rail: 0 }, timeoutMs: 10_000, acceptor: 'rank 0' }),
    );
    expect(refused.message).toMatch(/authentication failed: the dialer of rank 1 to rank 0 rail 0 does not know the job's secret/);

    // A header declaring a 1 GiB payload is refused at the header: not one payload byte is sent.
    const hog = stranger(one);
    await hog.connected;
    const huge = makeHeader(
      { uniqueId: UniqueId.fromHex(ZERO_ID), opcode: Opcode.AuthResponse, elementType: ElementType.U8, sourceRank: 1, destinationRank: 0, worldSize: 2, elementCount: 2 ** 30 },
      2 ** 30,
    );
    hog.socket.write(encodeHeader(huge));
    const hogOutcome = await hog.outcome;
    expect(hogOutcome.dropped).toBe(true);
    expect(frameText(hogOutcome.frames[1]!)).toMatch(/declaring 1073741824 payload bytes instead of an AuthResponse of 64/);

    await one.dialRankZero();
    await one.sendValue(42);
    await zero.waitFor(/^DONE$/);
    expect(resultOf(zero, 'receive')).toEqual([42]);
  }, 60_000);

  for (const secret of [generateSecret(), null]) {
    it(`an idle socket and a half-sent header on the peer port do not hold up the real peer (${secret ? 'with' : 'without'} a secret)`, async () => {
      const { zero, one } = await peerJob(secret);
      const idle = stranger(one);
      await idle.connected;
      const slow = stranger(one);
      await slow.connected;
      slow.socket.write(Buffer.from('GX1F'));
      const started = Date.now();
      await one.dialRankZero();
      // Before: the idle socket was handshaken first, with no timeout, and the job hung until its session timeout.
      expect(Date.now() - started).toBeLessThan(5_000);
      await one.sendValue(7);
      await zero.waitFor(/^DONE$/);
      expect(resultOf(zero, 'receive')).toEqual([7]);
      // The strangers never became links: they are dropped (by their handshake timeout, or as rank 0 ends).
      expect((await idle.outcome).frames.map((frame) => Opcode[frame.header.opcode])).not.toContain('PeerHello');
    }, 60_000);
  }
});
