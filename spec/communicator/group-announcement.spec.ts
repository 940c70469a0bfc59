/**
 * group()'s announcement (docs/protocol.md 13.5): the bitmap of the ranks listed, its tag, and the
 * mismatch's text, the same on both ranks that find it. Over real ranks: spec/communicator/split.spec.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bitmapMembers, groupAnnouncementTag, groupBitmap, groupMismatch } from '../../lib/communicator/group-announcement.js';

describe('the group announcement', () => {
  it('is a bitmap of the session\'s ranks, bit r % 8 of byte r >> 3, the same for any order of listing', () => {
    expect([...groupBitmap([3, 1], 4)]).toEqual([0b1010]);
    expect([...groupBitmap([0, 8, 9], 10)]).toEqual([0b1, 0b11]);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }).chain((worldSize) => fc.tuple(fc.constant(worldSize), fc.uniqueArray(fc.nat(worldSize - 1), { minLength: 1 }))),
        ([worldSize, members]) => {
          const bytes = groupBitmap(members, worldSize);
          expect(bytes.length).toBe(Math.ceil(worldSize / 8));
          expect(bitmapMembers(bytes)).toEqual([...members].sort((a, b) => a - b));
          expect(groupBitmap([...members].reverse(), worldSize)).toEqual(bytes);
        },
      ),
    );
  });

  it('is tagged "GP" in the top 16 bits and the count of earlier group calls listing both ranks below', () => {
    expect(groupAnnouncementTag(0)).toBe(0x4750_0000_0000_0000n);
    expect(groupAnnouncementTag(3)).toBe(0x4750_0000_0000_0003n);
  });

  it('names both ranks and both lists, the lower rank first, whichever rank finds it', () => {
    const text = 'group mismatch: rank 0 called group with ranks [0,1,2], rank 1 with ranks [0,1]: every rank listed calls group with the same ranks';
    expect(groupMismatch({ rank: 0, members: [2, 0, 1] }, { rank: 1, members: [0, 1] })).toBe(text);
    expect(groupMismatch({ rank: 1, members: [1, 0] }, { rank: 0, members: [0, 1, 2] })).toBe(text);
  });
});
