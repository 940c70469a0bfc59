/** P2pMatcher: matching rules and the bound on unmatched data a sender can park at the coordinator. */
import { describe, expect, it } from 'vitest';
import { P2pMatcher } from '../../lib/coordinator/p2p-matcher.js';
import { ANY_COUNT, ANY_RANK } from '../../lib/protocol/constants.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { makeFrame } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';

const uniqueId = UniqueId.fromBytes(new Array(16).fill(1));
const send = (source: number, destination: number, tag: bigint, sequence: bigint, bytes = 4) =>
  makeFrame(
    { uniqueId, opcode: Opcode.Send, elementType: ElementType.U8, sourceRank: source, destinationRank: destination, worldSize: 3, tag, sequence, elementCount: bytes },
    new Uint8Array(bytes).fill(Number(sequence)),
  );
const receive = (rank: number, source: number, tag: bigint, sequence: bigint, count = 4) =>
  makeFrame({ uniqueId, opcode: Opcode.Receive, elementType: ElementType.U8, sourceRank: rank, destinationRank: source, worldSize: 3, tag, sequence, elementCount: count });
const kinds = (deliveries: ReturnType<P2pMatcher['route']>) => deliveries.map((d) => `${d.rank}:${Opcode[d.frame.header.opcode]}#${d.frame.header.sequence}`);

describe('P2pMatcher', () => {
  it('acknowledges eagerly, matches FIFO per key, and honours ANY source', () => {
    const matcher = new P2pMatcher(uniqueId, 3);
    expect(kinds(matcher.route(0, send(0, 2, 9n, 0n)))).toEqual(['0:Send#0']);
    expect(kinds(matcher.route(1, send(1, 2, 9n, 0n)))).toEqual(['1:Send#0']);
    expect(kinds(matcher.route(0, send(0, 2, 9n, 1n)))).toEqual(['0:Send#1']);
    // Rank 2 receives from rank 0 first: the oldest send from 0 (sequence 0), then ANY: rank 1's.
    const first = matcher.route(2, receive(2, 0, 9n, 0n));
    expect(kinds(first)).toEqual(['2:Receive#0']);
    expect(first[0]!.frame.header.sourceRank).toBe(0);
    expect(Array.from(first[0]!.frame.parts[0]!)).toEqual([0, 0, 0, 0]);
    const any = matcher.route(2, receive(2, ANY_RANK, 9n, 1n));
    expect(any[0]!.frame.header.sourceRank).toBe(1);
    const last = matcher.route(2, receive(2, 0, 9n, 2n));
    expect(Array.from(last[0]!.frame.parts[0]!)).toEqual([1, 1, 1, 1]);
  });

  it('holds the acknowledgement of sends past the buffer limit until a receive takes them', () => {
    const matcher = new P2pMatcher(uniqueId, 3, 8);
    expect(kinds(matcher.route(0, send(0, 1, 5n, 0n)))).toEqual(['0:Send#0']);
    expect(kinds(matcher.route(0, send(0, 1, 5n, 1n)))).toEqual(['0:Send#1']);
    expect(matcher.bufferedBy(0)).toBe(8);
    // Over the limit: parked without an acknowledgement, so an awaiting sender waits.
    expect(kinds(matcher.route(0, send(0, 1, 5n, 2n)))).toEqual([]);
    expect(matcher.bufferedBy(0)).toBe(12);
    expect(kinds(matcher.route(1, receive(1, 0, 5n, 0n)))).toEqual(['1:Receive#0']);
    expect(kinds(matcher.route(1, receive(1, 0, 5n, 1n)))).toEqual(['1:Receive#1']);
    expect(kinds(matcher.route(1, receive(1, 0, 5n, 2n)))).toEqual(['1:Receive#2', '0:Send#2']);
    expect(matcher.bufferedBy(0)).toBe(0);
  });

  it('rejects a type/count contract mismatch naming the tag and both ranks', () => {
    const matcher = new P2pMatcher(uniqueId, 3);
    matcher.route(0, send(0, 1, 77n, 0n, 4));
    expect(() => matcher.route(1, receive(1, 0, 77n, 0n, 2))).toThrow('point-to-point tag 77 contract mismatch: send U8/4 receive U8/2 (rank 0 -> rank 1)');
  });

  it('gives a Receive of ANY_COUNT a send of any count of its type, and still names a type mismatch', () => {
    const matcher = new P2pMatcher(uniqueId, 3);
    matcher.route(0, send(0, 1, 78n, 0n, 5));
    const delivered = matcher.route(1, receive(1, 0, 78n, 0n, ANY_COUNT));
    expect(delivered[0]!.frame.header.elementCount).toBe(5);
    expect(Array.from(delivered[0]!.frame.parts[0]!)).toEqual([0, 0, 0, 0, 0]);
    matcher.route(0, send(0, 1, 79n, 1n, 5));
    const anyF32 = makeFrame({ uniqueId, opcode: Opcode.Receive, elementType: ElementType.F32, sourceRank: 1, destinationRank: 0, worldSize: 3, tag: 79n, sequence: 1n, elementCount: ANY_COUNT });
    expect(() => matcher.route(1, anyF32)).toThrow('point-to-point tag 79 contract mismatch: send U8/5 receive F32/any (rank 0 -> rank 1)');
  });

  it('turns an Abort into a remote abort naming the rank', () => {
    const matcher = new P2pMatcher(uniqueId, 3);
    const abort = makeFrame(
      { uniqueId, opcode: Opcode.Abort, elementType: ElementType.U8, sourceRank: 2, worldSize: 3, elementCount: 3 },
      new Uint8Array(Buffer.from('why')),
    );
    expect(() => matcher.route(2, abort)).toThrow('rank 2 aborted: why');
  });
});
