/**
 * The relayed mesh exchange (lib/collectives/exchange-relayed.ts, docs/protocol.md 9.7): worlds of
 * 3 and more agree and exchange through rank 0. Its wire format (the relay reply) is checked
 * against the documented bytes and by property; its failures name who is missing or who disagrees.
 */
import fc from 'fast-check';
import { lastValueFrom, tap, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { exchangeBarrier } from '../../lib/collectives/barrier/exchange.js';
import { exchangeAllGather } from '../../lib/collectives/all-gather/exchange.js';
import { exchangeAllReduce } from '../../lib/collectives/all-reduce/exchange.js';
import { EXCHANGE_TAG_PREFIX } from '../../lib/collectives/exchange-message.js';
import { HUB_RANK } from '../../lib/collectives/exchange-relayed.js';
import { pieceTag } from '../../lib/collectives/peer-data.js';
import { ProtocolError } from '../../lib/errors.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { decodeRelayedParts, encodeRelayedParts } from '../../lib/protocol/relay-codec.js';
import { viewTensor } from '../../lib/tensor.js';
import { memoryJob } from '../../lib/testing/index.js';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const settle = <T>(promise: Promise<T>) => promise.then(() => null, (error: Error) => error);

describe('the relay reply (docs/protocol.md 9.7)', () => {
  it('encodes the documented example byte for byte and decodes it back', () => {
    const parts = [Uint8Array.of(1, 2, 3, 4), new Uint8Array(0), Uint8Array.of(0xaa, 0xbb)];
    const encoded = encodeRelayedParts(parts);
    expect(hex(encoded)).toBe('03000000' + '04000000' + '00000000' + '02000000' + '01020304' + 'aabb');
    expect(decodeRelayedParts(encoded, 3).map(hex)).toEqual(['01020304', '', 'aabb']);
  });

  it('round-trips any parts, and the decoded parts are views of the message (no copy)', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { minLength: 1, maxLength: 9 }), (parts) => {
        const encoded = encodeRelayedParts(parts);
        const decoded = decodeRelayedParts(encoded, parts.length);
        expect(decoded.map(hex)).toEqual(parts.map(hex));
        for (const part of decoded) expect(part.buffer).toBe(encoded.buffer);
      }),
    );
  });

  it('refuses with the documented texts: another count, an overrunning length, trailing bytes, a short head', () => {
    const encoded = encodeRelayedParts([Uint8Array.of(1, 2, 3, 4), new Uint8Array(0), Uint8Array.of(0xaa, 0xbb)]);
    expect(() => decodeRelayedParts(encoded, 2)).toThrow(new ProtocolError('relayed exchange reply carries 3 parts, the world has 2 ranks'));
    const overrun = encoded.slice();
    overrun[8] = 9; // part 1 claims 9 bytes
    expect(() => decodeRelayedParts(overrun, 3)).toThrow(new ProtocolError('relayed exchange reply: part 1 of 9 bytes overruns the 22-byte message'));
    const trailing = Uint8Array.of(...encoded, 0);
    expect(() => decodeRelayedParts(trailing, 3)).toThrow(new ProtocolError('relayed exchange reply has 1 bytes after its last part'));
    expect(() => decodeRelayedParts(encoded.subarray(0, 7), 3)).toThrow(ProtocolError);
  });

  it('never throws anything but a ProtocolError on arbitrary bytes, and never reads past them', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.integer({ min: 1, max: 8 }), (bytes, worldSize) => {
        try {
          const parts = decodeRelayedParts(bytes, worldSize);
          expect(parts.reduce((total, part) => total + part.length, 0) + 4 * (worldSize + 1)).toBe(bytes.length);
        } catch (error) {
          expect(error).toBeInstanceOf(ProtocolError);
        }
      }),
    );
  });
});

describe('the relayed exchange in worlds of 3..8 (in memory)', () => {
  it('goes through the hub only: 2(W-1) messages, each rank to rank 0 on step 0 and back on step 1', async () => {
    for (let worldSize = 3; worldSize <= 8; worldSize++) {
      const { ranks, traffic } = memoryJob(worldSize);
      const results = await Promise.all(ranks.map(({ links, context }) => lastValueFrom(exchangeAllReduce(links, { view: viewTensor(Float32Array.of(links.rank, 1)), op: 'sum' }, context))));
      for (const result of results) expect(Array.from(new Float32Array(result.buffer, result.byteOffset, 2))).toEqual([(worldSize * (worldSize - 1)) / 2, worldSize]);
      expect(traffic.coordinated).toBe(0);
      expect(traffic.messages).toHaveLength(2 * (worldSize - 1));
      const up = pieceTag(EXCHANGE_TAG_PREFIX, 0n, 0, 0, 0);
      const down = pieceTag(EXCHANGE_TAG_PREFIX, 0n, 0, 1, 0);
      for (const message of traffic.messages) {
        if (message.to === HUB_RANK) expect(message.tag).toBe(up);
        else expect([message.from, message.tag]).toEqual([HUB_RANK, down]);
      }
    }
  });

  it('names both ranks and both descriptors on every rank when one rank calls another collective, and aborts the job', async () => {
    const { ranks, traffic } = memoryJob(4);
    const errors = await Promise.all(
      ranks.map(({ links, context }) =>
        settle(
          lastValueFrom(
            links.rank === 3
              ? exchangeAllGather(links, { view: viewTensor(Float32Array.of(1)) }, context)
              : exchangeAllReduce(links, { view: viewTensor(Float32Array.of(1)), op: 'sum' }, context),
          ),
        ),
      ),
    );
    const expected = 'collective sequence 0 mismatch: rank 0 submitted {AllReduce F32 root ANY count 1 op sum layout 0}, rank 3 submitted {AllGather F32 root ANY count 1 op none layout 0}';
    // The hub saw it and aborts with the text; the others end with that abort.
    expect(errors[0]!.message).toBe(expected);
    for (const error of errors.slice(1)) expect(error!.message).toContain(expected);
    expect(traffic.aborts).toEqual([{ rank: 0, reason: expected }]);
  });

  it('the hub names the ranks that never came at exactly the timeout; the others hear it before their grace runs out', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { ranks, traffic } = memoryJob(5, { scheduler, timeoutMs: 5_000 });
    const waiting = [0, 2, 3].map((rank) => settle(lastValueFrom(exchangeBarrier(ranks[rank]!.links, {}, ranks[rank]!.context), { defaultValue: undefined })));
    await Promise.resolve();
    scheduler.flush();
    const [hub, two, three] = await Promise.all(waiting);
    const text = 'rank 0 collective 0 (Barrier) on the direct peer mesh; missing ranks [1,4] timed out';
    expect(hub!.message).toBe(text);
    for (const error of [two!, three!]) expect(error.message).toContain(text);
    expect(traffic.aborts).toEqual([{ rank: 0, reason: text }]);
  });

  it('a rank whose hub never answers names the hub after the timeout plus the grace (virtual time)', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { ranks, traffic } = memoryJob(3, { scheduler, timeoutMs: 5_000 });
    let failedAt: number | null = null;
    const barrier = exchangeBarrier(ranks[1]!.links, {}, ranks[1]!.context).pipe(tap({ error: () => (failedAt = scheduler.now()) }));
    const waiting = settle(lastValueFrom(barrier, { defaultValue: undefined }));
    await Promise.resolve();
    scheduler.flush();
    expect(failedAt).toBe(5_250);
    expect((await waiting)!.message).toBe('rank 1 collective 0 (Barrier) on the direct peer mesh; missing ranks [0] timed out');
    expect(traffic.aborts.map((abort) => abort.rank)).toEqual([1]);
  });

  it('a corrupt relay reply fails the rank with the decoder text and aborts the job', async () => {
    const { ranks, traffic } = memoryJob(3);
    const member = ranks[1]!;
    const hub = ranks[0]!;
    const pending = settle(lastValueFrom(exchangeBarrier(member.links, {}, member.context), { defaultValue: undefined }));
    // The hub sends a reply with 2 parts where the world has 3.
    await lastValueFrom(hub.links.send(0, 1, pieceTag(EXCHANGE_TAG_PREFIX, 0n, 0, 1, 0), encodeRelayedParts([Uint8Array.of(1, 2, 3, 4), new Uint8Array(0)]), { elementType: ElementType.U8, count: 16 }), {
      defaultValue: undefined,
    });
    const error = await pending;
    expect(error!.message).toBe('relayed exchange reply carries 2 parts, the world has 3 ranks');
    expect(traffic.aborts).toEqual([{ rank: 1, reason: error!.message }]);
  });
});
