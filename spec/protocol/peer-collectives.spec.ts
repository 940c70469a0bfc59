/**
 * docs/protocol.md 9.6 and 9.7 describe rxccl's ring and pairwise all-reduces (and the pairwise
 * broadcast) precisely enough to interoperate with: this checks that description against
 * `ringAllReduce`, `pairwiseAllReduce` and `pairwiseBroadcast` frame by frame (segments, pieces, tags, rails, neighbours in the ring order, channels) and where
 * avg divides.
 */
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Algorithm, Collectives } from '../../lib/collectives/algorithm.js';
import { pairwiseAllReduce as pairwiseAllReduceSchedule } from '../../lib/collectives/all-reduce/pairwise.js';
import { ringAllReduce as ringAllReduceSchedule } from '../../lib/collectives/all-reduce/ring.js';
import { pairwiseBroadcast as pairwiseBroadcastSchedule } from '../../lib/collectives/broadcast/pairwise.js';
import { runScheduled } from '../../lib/collectives/run-scheduled.js';
import type { ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import type { ScheduledName } from '../../lib/collectives/scheduled-call.js';
import { pieceTag } from '../../lib/collectives/peer-data.js';
import { layoutHash } from '../../lib/protocol/layout-hash.js';
import { viewTensor } from '../../lib/tensor.js';
import { descriptorOf } from '../../lib/collectives/descriptor.js';
import { decodeDescriptor, DESCRIPTOR_BYTES, encodeDescriptor } from '../../lib/protocol/descriptor-codec.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { reduceOpCode } from '../../lib/protocol/reduce-op.js';
import { memoryJob } from '../../lib/testing/index.js';

/** A schedule on the JS plane (the wire this document describes), as an algorithm of the links. */
function onLinks<N extends ScheduledName>(collective: N, name: string, schedule: ScheduleOf): Algorithm<Collectives[N][0], Collectives[N][1]> {
  return (links, request, context) => runScheduled(collective, name, schedule, 'js', links, request, context);
}

const ringAllReduce = onLinks('allReduce', 'ring', ringAllReduceSchedule);
const pairwiseAllReduce = onLinks('allReduce', 'pairwise', pairwiseAllReduceSchedule);
const pairwiseBroadcast = onLinks('broadcast', 'pairwise', pairwiseBroadcastSchedule);

interface Sent {
  readonly rail: number;
  readonly destination: number;
  readonly tag: bigint;
  readonly count: number;
}

const mod = (value: number, modulus: number) => ((value % modulus) + modulus) % modulus;

/** Element ranges of `parts` even parts of [start, start + n) (the first ones one larger). */
function even(start: number, n: number, parts: number): { start: number; size: number }[] {
  let next = start;
  return Array.from({ length: parts }, (_, k) => {
    const size = Math.floor(n / parts) + (k < n % parts ? 1 : 0);
    const range = { start: next, size };
    next += size;
    return range;
  });
}

/** The sends of the rank at position `p` of `order`, exactly as docs 9.6 words them (values left out). */
function documentedSends(order: number[], p: number, R: number, C: number, N: number, width: number, sequence: bigint): Sent[] {
  const W = order.length;
  const next = order[mod(p + 1, W)]!;
  const tag = (channel: number, s: number, c: number) =>
    (0x5247n << 48n) | ((sequence & 0x3ffffn) << 30n) | (BigInt(channel) << 24n) | (BigInt(s) << 12n) | BigInt(c);
  const perChannel = even(0, N, C).map((part, channel) => {
    const segments = even(part.start, part.size, W);
    const pieces = (k: number, s: number) => {
      const size = segments[k]!.size;
      const P = Math.max(1, Math.floor(2 ** 20 / width), Math.ceil(size / 4095));
      return Array.from({ length: Math.ceil(size / P) }, (_, c) => ({ rail: (channel + c) % R, destination: next, tag: tag(channel, s, c), count: Math.min(P, size - c * P) }));
    };
    const reduceScatter = Array.from({ length: W - 1 }, (_, s) => pieces(mod(p - s, W), s));
    const allGather = Array.from({ length: W - 1 }, (_, t) => pieces(mod(p - t + 1, W), W - 1 + t));
    return [...reduceScatter, ...allGather].flat();
  });
  return perChannel.flat();
}

describe('the ring all-reduce of docs 9.6', () => {
  it('sends the documented segments, pieces, tags and rails along the ring order; avg divides the owned segment before the all-gather', async () => {
    const order = [0, 2, 1];
    const W = order.length;
    const R = 2;
    const C = 2;
    const P = 2 ** 18; // i32 elements per 1 MiB piece
    const N = 2 * (3 * P + 2); // per channel: segments P+1, P+1, P, the first two split into two pieces
    const { ranks, traffic } = memoryJob(W, { rails: R, ringOrder: order, ringChannels: C, pieceBytes: 2 ** 20 });
    const results = await Promise.all(
      ranks.map(({ links, context }) => lastValueFrom(ringAllReduce(links, { view: viewTensor(new Int32Array(N).fill(3 * (links.rank + 1))), op: 'avg' }, context))),
    );
    for (let rank = 0; rank < W; rank++) {
      const sent = traffic.messages.filter((message) => message.from === rank);
      const documented = documentedSends(order, order.indexOf(rank), R, C, N, 4, 0n);
      // Pieces run as pipelines (piece k of step t goes as soon as step t-1 brought it): the same
      // frames, in an order that interleaves steps. Within one piece they go in step order.
      const byTag = (a: { tag: bigint }, b: { tag: bigint }) => (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0);
      const actual = sent.map(({ rail, to, tag, bytes }) => ({ rail, destination: to, tag, count: bytes / 4 }));
      expect([...actual].sort(byTag)).toEqual([...documented].sort(byTag));
      const stepsOfPiece = (channel: number, piece: number) =>
        actual.filter((send) => Number((send.tag >> 24n) & 0x3fn) === channel && Number(send.tag & 0xfffn) === piece).map((send) => Number((send.tag >> 12n) & 0xfffn));
      for (let channel = 0; channel < C; channel++) {
        const steps = stepsOfPiece(channel, 0);
        expect(steps).toEqual([...steps].sort((a, b) => a - b));
      }
      expect(Array.from(new Int32Array(results[rank]!.slice().buffer)).every((value) => value === 6)).toBe(true); // (3 + 6 + 9) / 3
    }
  });

  it('piece tags and layout hashes as the document gives them', () => {
    expect(pieceTag(0x5247, 7n, 0, 1, 0)).toBe(0x5247_0001_c000_1000n);
    expect(pieceTag(0x4243, (1n << 18n) + 5n, 63, 4095, 4095)).toBe((0x4243n << 48n) | (5n << 30n) | (63n << 24n) | (4095n << 12n) | 4095n);
    // FNV-1a 64 of the empty text is the offset basis; of "a", the published value.
    expect(layoutHash('')).toBe(0xcbf29ce484222325n);
    expect(layoutHash('a')).toBe(0xaf63dc4c8601ec8cn);
  });
});

describe('the pairwise all-reduce of docs 9.6', () => {
  it('sends each owner its segment (step 0), then the owner its reduced segment to every rank (step 1), with the documented tags, pieces and rails', async () => {
    const W = 3;
    const R = 2;
    const P = 2 ** 19; // i32 elements per 2 MiB pairwise piece (floor(2^21 / 4))
    const N = 3 * P + 4; // segments P+2, P+1, P+1: each split into a full piece and a short one
    const { ranks, traffic } = memoryJob(W, { rails: R, pieceBytes: 2 ** 20 });
    const results = await Promise.all(
      ranks.map(({ links, context }) => lastValueFrom(pairwiseAllReduce(links, { view: viewTensor(new Int32Array(N).fill(3 * (links.rank + 1))), op: 'avg' }, context))),
    );
    const segments = even(0, N, W);
    const tag = (step: number, c: number) => (0x5057n << 48n) | (0n << 30n) | (BigInt(step) << 12n) | BigInt(c);
    const pieces = (k: number, step: number, destination: number) => {
      const size = segments[k]!.size;
      return Array.from({ length: Math.ceil(size / P) }, (_, c) => ({ rail: c % R, destination, tag: tag(step, c), count: Math.min(P, size - c * P) }));
    };
    const byKey = (a: Sent, b: Sent) => (a.destination - b.destination) || (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0);
    for (let r = 0; r < W; r++) {
      const peers = [1, 2].map((offset) => (r + offset) % W);
      const documented = [...peers.flatMap((q) => pieces(q, 0, q)), ...peers.flatMap((q) => pieces(r, 1, q))];
      const actual = traffic.messages.filter((message) => message.from === r).map(({ rail, to, tag, bytes }) => ({ rail, destination: to, tag, count: bytes / 4 }));
      expect([...actual].sort(byKey)).toEqual([...documented].sort(byKey));
      // Step 0 goes to the peers in the order r+1, r+2: the first send is to r+1.
      expect(actual[0]!.destination).toBe(peers[0]);
      expect(Array.from(new Int32Array(results[r]!.slice().buffer)).every((value) => value === 6)).toBe(true); // (3 + 6 + 9) / 3
    }
    expect(pieceTag(0x5057, 7n, 0, 1, 2)).toBe(0x5057_0001_c000_1002n);
  });
});

describe('the pairwise broadcast of docs 9.6', () => {
  it('the root sends each piece in turn to every rank in the order root+1, root+2, ... (step 1), with the documented tags and rails; nobody else sends', async () => {
    const W = 4;
    const R = 3;
    const root = 2;
    const P = 2 ** 19; // i32 elements per 2 MiB pairwise piece (floor(2^21 / 4))
    const N = 2 * P + 5; // two full pieces and a short one
    const { ranks, traffic } = memoryJob(W, { rails: R, pieceBytes: 2 ** 20 });
    const results = await Promise.all(
      ranks.map(({ links, context }) =>
        lastValueFrom(pairwiseBroadcast(links, { view: viewTensor(Int32Array.from({ length: N }, (_, index) => (links.rank === root ? index : -1))), root }, context)),
      ),
    );
    const tag = (c: number) => (0x5057n << 48n) | (1n << 12n) | BigInt(c);
    const pieces = Array.from({ length: Math.ceil(N / P) }, (_, c) => ({ rail: c % R, tag: tag(c), count: Math.min(P, N - c * P) }));
    const peers = [1, 2, 3].map((offset) => (root + offset) % W);
    const documented = pieces.flatMap((piece) => peers.map((destination) => ({ ...piece, destination })));
    const actual = traffic.messages.map(({ from, rail, to, tag, bytes }) => ({ from, rail, destination: to, tag, count: bytes / 4 }));
    expect(actual.every((message) => message.from === root)).toBe(true);
    expect(actual.map(({ from: _from, ...sent }) => sent)).toEqual(documented);
    for (const result of results) expect(Array.from(new Int32Array(result.slice().buffer)).every((value, index) => value === index)).toBe(true);
  });
});

describe('the collective header\'s descriptor of docs 9.7', () => {
  it('encodes the documented example and decodes what it encodes', () => {
    const bytes = new Uint8Array(DESCRIPTOR_BYTES);
    const descriptor = descriptorOf({ opcode: Opcode.AllReduce, elementType: ElementType.F32, elementCount: 2, reduceOp: reduceOpCode('sum') }, '');
    encodeDescriptor(descriptor, 0n, bytes);
    expect(Buffer.from(bytes).toString('hex')).toBe('0b0b0100ffffffff020000000000000000000000000000000000000000000000');
    expect(decodeDescriptor(bytes)).toEqual({ descriptor, sequence: 0n });
    expect(() => decodeDescriptor(bytes.subarray(0, 31))).toThrow('collective header of 31 bytes is shorter than its 32-byte descriptor');
  });
});
