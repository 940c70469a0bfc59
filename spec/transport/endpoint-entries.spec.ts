/**
 * A run of endpoint entries (#47 item 4, docs/protocol.md 8.3, revision 14): the coordinator's
 * answer to a publication and a gather partner's answer. Round trips through the wire's bytes for
 * any job and run, the vector docs/protocol.md gives, and every corrupt field refused by name.
 */
import fc from 'fast-check';
import { firstValueFrom, of, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { acceptorMac, authContext, dialerMac } from '../../lib/protocol/auth.js';
import { peerEndpointFrame, peerHelloHeader } from '../../lib/protocol/control-frames.js';
import { choiceDefaults } from '../../lib/collectives/choice-settings.js';
import { choiceSettingsDiffer, formatChoiceSettings } from '../../lib/transport/choice-attribute.js';
import { decodeFrames } from '../../lib/protocol/decode-frames.js';
import type { Frame } from '../../lib/protocol/frame.js';
import { encodeHeader } from '../../lib/protocol/header.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { endpointEntriesFrame, readEndpointEntries } from '../../lib/transport/endpoint-entries.js';
import { GATHER_LINK } from '../../lib/transport/gather-links.js';
import { arbRailEndpoints } from '../../lib/testing/arbitraries/endpoints.js';
import type { RankEndpoints } from '../../lib/transport/peer-endpoint-config.js';

const uniqueId = UniqueId.fromBytes(Array.from({ length: 16 }, (_, index) => index));

async function throughTheWire(frame: Frame): Promise<Frame> {
  const bytes = new Uint8Array([...encodeHeader(frame.header), ...frame.payload]);
  const [decoded] = await firstValueFrom(of(bytes).pipe(decodeFrames(), toArray()));
  return decoded!;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/** The coordinator's run of `entries` from rank `first` to rank `destination` of 4 (1 rail): the frame, its payload's text, its header's bytes in hex. */
function coordinatorRun(destination: number, first: number, entries: readonly RankEndpoints[]) {
  const frame = endpointEntriesFrame({ uniqueId, worldSize: 4, rails: 1 }, { source: 0, destination, first }, entries);
  return { frame, text: Buffer.from(frame.payload).toString('utf8'), header: hex(encodeHeader(frame.header)) };
}

/** A rank's choice settings as its `choice=` attribute carries them (revision 18). */
const arbChoice = fc
  .uniqueArray(fc.tuple(fc.stringMatching(/^GX1_[A-Z_]{1,12}$/), fc.string({ unit: 'grapheme', maxLength: 12 })), { selector: ([variable]) => variable, minLength: 1, maxLength: 4 })
  .map((settings) => formatChoiceSettings(settings)!);

/** A job (world size, rails), a run's sender, receiver and first rank, and its entries. */
const arbRun = fc.integer({ min: 1, max: 64 }).chain((worldSize) => {
  const rank = fc.integer({ min: 0, max: worldSize - 1 });
  return fc.integer({ min: 1, max: 4 }).chain((rails) =>
    fc.record({
      worldSize: fc.constant(worldSize),
      rails: fc.constant(rails),
      source: rank,
      destination: rank,
      first: rank,
      entries: fc.array(fc.record({ endpoints: arbRailEndpoints(rails), dataPlane: fc.constantFrom('auto' as const, 'native' as const, null), choice: arbChoice }, { requiredKeys: ['endpoints', 'dataPlane'] }), {
        minLength: 1,
        maxLength: Math.min(worldSize, 8),
      }),
    }),
  );
});

describe('a run of endpoint entries', () => {
  it('round-trips through the wire for any job, run and entries (either layout, any offers and choice settings)', async () => {
    await fc.assert(
      fc.asyncProperty(arbRun, async ({ worldSize, rails, source, destination, first, entries }) => {
        const job = { uniqueId, worldSize, rails };
        const frame = await throughTheWire(endpointEntriesFrame(job, { source, destination, first }, entries));
        expect(readEndpointEntries(frame, job, { source, destination, first, count: entries.length }, 'rank 1')).toEqual(entries);
      }),
      { numRuns: 200 },
    );
  });

  it("is docs/protocol.md 8.3's vector: the coordinator's answer to rank 2 of 4", () => {
    const { text, header } = coordinatorRun(2, 2, [
      { endpoints: [{ host: '127.0.0.1', port: 40415 }], dataPlane: 'auto' },
      { endpoints: [{ host: '127.0.0.1', port: 40519 }], dataPlane: null },
    ]);
    expect(text).toBe('127.0.0.1:40415 data-plane=auto\n127.0.0.1:40519');
    expect(header).toBe(
      '47583146010060000301000001000000000102030405060708090a0b0c0d0e0f' +
        '0000000002000000020000000400000000000000000000000100000000000000' +
        '2f000000000000002f000000000000000000000000000000000000005909d74e',
    );
  });

  it("is docs/protocol.md 8.3's vector of revision 18: every rank of 4 told that ranks 1 and 2 choose by different settings, and fails naming them", () => {
    const { frame, text, header } = coordinatorRun(3, 1, [
      { endpoints: [{ host: '127.0.0.1', port: 40307 }], dataPlane: 'auto' },
      { endpoints: [{ host: '127.0.0.1', port: 40415 }], dataPlane: 'auto', choice: 'GX1_RING_CHANNELS:4' },
    ]);
    expect(text).toBe('127.0.0.1:40307 data-plane=auto\n127.0.0.1:40415 data-plane=auto choice=GX1_RING_CHANNELS:4');
    expect(header).toBe(
      '47583146010060000301000001000000000102030405060708090a0b0c0d0e0f' +
        '0000000003000000010000000400000000000000000000000100000000000000' +
        '5a000000000000005a000000000000000000000000000000000000008f976188',
    );
    const [one, two] = readEndpointEntries(frame, { uniqueId, worldSize: 4, rails: 1 }, { source: 0, destination: 3, first: 1, count: 2 }, 'the coordinator');
    expect(choiceSettingsDiffer(1, one!.choice, 2, two!.choice, choiceDefaults(4, 1)).message).toBe(
      'GX1_RING_CHANNELS differs: rank 1 has 1 (the default), rank 2 has 4; every rank must choose collectives alike',
    );
    expect(hex(encodeHeader(peerEndpointFrame({ uniqueId, rank: 2, worldSize: 4 }, 1, '127.0.0.1:40415 data-plane=auto choice=GX1_RING_CHANNELS:4').header))).toBe(
      '47583146010060000301000001000000000102030405060708090a0b0c0d0e0f' +
        '02000000ffffffffffffffff0400000000000000000000000100000000000000' +
        '3a000000000000003a00000000000000000000000000000000000000b939f61b',
    );
  });

  it("is docs/protocol.md 8.3's gather link vectors: rank 0's hello to rank 1, rank 1's run of rank 2's entry, the claim's MACs", () => {
    expect(GATHER_LINK).toBe(0x47415448);
    expect(hex(encodeHeader(peerHelloHeader({ uniqueId, rank: 0, worldSize: 4 }, 1, GATHER_LINK)))).toBe(
      '47583146010060001400000000000000000102030405060708090a0b0c0d0e0f' +
        '0000000001000000ffffffff0400000000000000000000004854414700000000' +
        '0000000000000000000000000000000000000000000000000000000099617567',
    );
    const run = endpointEntriesFrame({ uniqueId, worldSize: 4, rails: 1 }, { source: 1, destination: 0, first: 2 }, [{ endpoints: [{ host: '127.0.0.1', port: 40415 }], dataPlane: 'auto' }]);
    expect(hex(encodeHeader(run.header))).toBe(
      '47583146010060000301000001000000000102030405060708090a0b0c0d0e0f' +
        '0100000000000000020000000400000000000000000000000100000000000000' +
        '1f000000000000001f00000000000000000000000000000000000000387a2d82',
    );
    const secret = new Uint8Array(Buffer.from('rxccl-vector-secret-0123456789'));
    const nonceA = Uint8Array.from({ length: 32 }, (_, index) => index);
    const nonceD = Uint8Array.from({ length: 32 }, (_, index) => 32 + index);
    const claim = { rank: 0, worldSize: 4, peer: 1, rail: GATHER_LINK };
    expect(authContext(claim)).toBe('rank 0 to rank 1 rail 1195463752');
    expect(hex(dialerMac(secret, nonceA, nonceD, claim))).toBe('278604a787f6526ea8b6a26750b7bf22706feda51ece45ec9b0abc7321930de4');
    expect(hex(acceptorMac(secret, nonceA, nonceD, claim))).toBe('c5ce128f2390431e710b395a9c8c9d2bd52794ab3f82464124c669abe8503570');
  });

  it('refuses every field that is not what the reader expects, naming the sender and the field', () => {
    const job = { uniqueId, worldSize: 8, rails: 1 };
    const run = { source: 3, destination: 2, first: 4 };
    const entries: RankEndpoints[] = [{ endpoints: [{ host: '10.0.0.4', port: 4 }], dataPlane: null }];
    const good = endpointEntriesFrame(job, run, entries);
    const read = (frame: Frame, expected = { ...run, count: 1 }) => () => readEndpointEntries(frame, job, expected, 'direct peer rank 3');
    const withHeader = (change: Partial<Frame['header']>): Frame => ({ header: { ...good.header, ...change }, payload: good.payload });
    expect(read(good)()).toEqual(entries);
    const refused = 'direct peer rank 3 sent an invalid run of direct peer endpoints: ';
    expect(read(withHeader({ opcode: 20 }))).toThrow(`${refused}opcode 20, expected 3 (PeerEndpoint)`);
    expect(read(withHeader({ elementType: 0 }))).toThrow(`${refused}element type 0, flags 0x1, element count 10 for 10 payload bytes (expected U8 text with flags PAYLOAD)`);
    expect(read(withHeader({ uniqueId: UniqueId.fromBytes(new Array(16).fill(9)) }))).toThrow(`${refused}it belongs to another session (unique id mismatch)`);
    expect(read(withHeader({ worldSize: 9 }))).toThrow(`${refused}world size 9, expected 8`);
    expect(read(withHeader({ sourceRank: 5 }))).toThrow(`${refused}source 5 and destination 2, expected 3 and 2`);
    expect(read(withHeader({ rootRank: 5 }))).toThrow(`${refused}its first rank is 5, expected 4`);
    expect(read(withHeader({ tag: 2n }))).toThrow(`${refused}sequence 0 and tag 2, expected 0 and 1 (the rail count)`);
    const notText = Uint8Array.of(0xff, 0xfe, 0x31, 0x3a, 0x34);
    expect(read({ header: { ...good.header, elementCount: notText.length, payloadBytes: notText.length }, payload: notText })).toThrow(`${refused}its payload is not UTF-8`);
    expect(read(good, { ...run, count: 2 })).toThrow(`${refused}ranks 4.. (2): coordinator returned 1 direct peer endpoints, expected 2 shared endpoints or 2 rail endpoints`);
    const garbled = new Uint8Array(Buffer.from('10.0.0.4:4 x=1', 'utf8'));
    expect(read({ header: { ...good.header, elementCount: garbled.length, payloadBytes: garbled.length }, payload: garbled })).toThrow(
      `${refused}ranks 4.. (1): direct peer endpoint "10.0.0.4:4 x=1" has an attribute it cannot carry: "x=1"`,
    );
  });
});
