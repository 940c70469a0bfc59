import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../lib/errors.js';
import { ANY_RANK } from '../../lib/protocol/constants.js';
import { admissionFrame, ANY_WORLD_SIZE, growRequestFrame, growRequestMembers, isJoinerHeader, joinerHeader, joinersWaitingFrame } from '../../lib/protocol/control-frames.js';
import { frameText } from '../../lib/protocol/frame.js';
import { formatGrownJob, type GrownJob, readGrownJob } from '../../lib/protocol/grown-job.js';
import { decodeHeader, encodeHeader } from '../../lib/protocol/header.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';

/** The frames that grow a fault-tolerant job (docs/protocol.md 13.9), as a second implementation reads them. */
const arbUniqueId = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((bytes) => UniqueId.fromBytes(bytes));
const arbGrownJob: fc.Arbitrary<GrownJob> = fc
  .record({ port: fc.integer({ min: 1, max: 65535 }), uniqueId: arbUniqueId, worldSize: fc.integer({ min: 1, max: 100_000 }) })
  .chain(({ port, uniqueId, worldSize }) =>
    fc.record({ rank: fc.integer({ min: 0, max: worldSize - 1 }), members: fc.integer({ min: 1, max: worldSize }) }).map(({ rank, members }) => ({ port, uniqueId, rank, worldSize, members })),
  );

describe('growth frames (docs/protocol.md 13.9)', () => {
  it('an admission round-trips through its text and its Ready frame, header bytes included', () => {
    fc.assert(
      fc.property(arbGrownJob, arbUniqueId, fc.oneof(fc.constant(ANY_RANK), fc.integer({ min: 0, max: 7 })), (job, jobId, destination) => {
        const frame = admissionFrame({ uniqueId: jobId, worldSize: destination === ANY_RANK ? ANY_WORLD_SIZE : 8 }, destination, formatGrownJob(job));
        const header = decodeHeader(encodeHeader(frame.header));
        expect(header.opcode).toBe(Opcode.Ready);
        expect(header.destinationRank).toBe(destination);
        const read = readGrownJob(frameText(frame));
        expect({ ...read, uniqueId: read.uniqueId.toHex() }).toEqual({ ...job, uniqueId: job.uniqueId.toHex() });
      }),
    );
  });

  it('any other text is refused as PROTOCOL naming what was wrong, never thrown otherwise', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), arbGrownJob.chain((job) => fc.nat({ max: 80 }).map((cut) => formatGrownJob(job).slice(0, cut) + 'x'))), (text) => {
        let read: GrownJob | null = null;
        try {
          read = readGrownJob(text);
        } catch (error) {
          expect(error).toBeInstanceOf(ProtocolError);
          expect((error as Error).message).toMatch(/^invalid admission /);
          return;
        }
        // Accepted only as the exact text of what it read.
        expect(formatGrownJob(read)).toBe(text);
      }),
    );
    expect(() => readGrownJob('port=1 unique-id=00000000000000000000000000000000 rank=4 world-size=4 members=1')).toThrow(
      'invalid admission "port=1 unique-id=00000000000000000000000000000000 rank=4 world-size=4 members=1": rank 4 and members 1 must be within world size 4',
    );
  });

  it('a grow request carries its members as u32s, read back in order; a payload of the wrong size is refused', () => {
    fc.assert(
      fc.property(arbUniqueId, fc.uniqueArray(fc.integer({ min: 0, max: 63 }), { minLength: 1, maxLength: 64 }), fc.integer({ min: 1, max: 64 }), (uniqueId, members, joiners) => {
        const frame = growRequestFrame({ uniqueId, rank: members[0]!, worldSize: 64 }, joiners, members);
        expect(decodeHeader(encodeHeader(frame.header)).tag).toBe(BigInt(joiners));
        expect(growRequestMembers(frame)).toEqual(members);
        expect(() => growRequestMembers({ ...frame, payload: frame.payload.subarray(1) })).toThrow(ProtocolError);
      }),
    );
  });

  it('a joiner\'s JOIN claims no rank of no world, and only it reads as one; the notice of joiners waiting carries the count in its tag', () => {
    const uniqueId = UniqueId.random();
    const joiner = decodeHeader(encodeHeader(joinerHeader(uniqueId)));
    expect([joiner.opcode, joiner.sourceRank, joiner.worldSize, joiner.flags, joiner.tag]).toEqual([Opcode.Join, ANY_RANK, 0xffffffff, 0, 0n]);
    expect(isJoinerHeader(joiner)).toBe(true);
    const notice = joinersWaitingFrame({ uniqueId, worldSize: 4 }, 2, 3);
    expect([notice.header.opcode, notice.header.sourceRank, notice.header.destinationRank, notice.header.tag]).toEqual([Opcode.Join, ANY_RANK, 2, 3n]);
    expect(isJoinerHeader(notice.header)).toBe(false);
  });
});
