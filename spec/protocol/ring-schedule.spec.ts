/**
 * docs/protocol.md 9.6 describes rxccl's ring all-reduce precisely enough to interoperate with:
 * this checks that description against `ringAllReduce` frame by frame (segments, pieces, tags,
 * rails, neighbours) and where avg divides.
 */
import { describe, expect, it } from 'vitest';
import { ringAllReduce, type RingLinks } from '../../lib/collectives/ring-all-reduce.js';

interface Sent {
  readonly rail: number;
  readonly destination: number;
  readonly tag: bigint;
  readonly count: number;
  /** The first element of the piece (i32). */
  readonly first: number;
}

/** Links that deliver in memory and log every send of every rank, in order. */
function recordingRing(worldSize: number, rails: number): { links: RingLinks[]; sent: Sent[][] } {
  const mail = new Map<string, Uint8Array>();
  const waiting = new Map<string, (bytes: Uint8Array) => void>();
  const sent: Sent[][] = Array.from({ length: worldSize }, () => []);
  const links = Array.from({ length: worldSize }, (_, rank): RingLinks => ({
    rank,
    worldSize,
    rails,
    async send(rail, destination, tag, bytes, count) {
      sent[rank]!.push({ rail, destination, tag, count, first: new DataView(bytes.buffer, bytes.byteOffset).getInt32(0, true) });
      const key = `${rank}>${destination} ${rail} ${tag}`;
      const deliver = waiting.get(key);
      waiting.delete(key);
      if (deliver) deliver(bytes.slice());
      else mail.set(key, bytes.slice());
    },
    receive(rail, source, tag) {
      const key = `${source}>${rank} ${rail} ${tag}`;
      const ready = mail.get(key);
      mail.delete(key);
      return ready ? Promise.resolve(ready) : new Promise((resolve) => waiting.set(key, resolve));
    },
  }));
  return { links, sent };
}

const mod = (value: number, modulus: number) => ((value % modulus) + modulus) % modulus;

/** The sends of rank `r` exactly as docs 9.6 words them (values left out). */
function documentedSends(r: number, W: number, R: number, N: number, width: number, sequence: bigint): Omit<Sent, 'first'>[] {
  const size = (k: number) => Math.floor(N / W) + (k < N % W ? 1 : 0);
  const P = Math.max(1, Math.floor(2 ** 20 / width));
  const tag = (s: number, c: number) => (0x5247n << 48n) | ((sequence & 0xffffffn) << 24n) | (BigInt(s) << 12n) | BigInt(c);
  const pieces = (k: number, s: number) =>
    Array.from({ length: Math.ceil(size(k) / P) }, (_, c) => ({
      rail: c % R,
      destination: mod(r + 1, W),
      tag: tag(s, c),
      count: Math.min(P, size(k) - c * P),
    }));
  const reduceScatter = Array.from({ length: W - 1 }, (_, s) => pieces(mod(r - s, W), s));
  const allGather = Array.from({ length: W - 1 }, (_, t) => pieces(mod(r - t + 1, W), W - 1 + t));
  return [...reduceScatter, ...allGather].flat();
}

describe('the ring all-reduce of docs 9.6', () => {
  it('sends the documented segments, pieces, tags and rails; avg divides the owned segment before the all-gather', async () => {
    const W = 3;
    const R = 2;
    const P = 2 ** 18; // i32 elements per 1 MiB piece
    const N = 3 * P + 2; // segments P+1, P+1, P: the first two split into two pieces
    const sequence = 0x1234567n; // only its low 24 bits reach the tag
    const { links, sent } = recordingRing(W, R);
    const results = await Promise.all(
      links.map((link) => {
        const data = new Int32Array(N).fill(3 * (link.rank + 1)); // sum 18, avg 6
        return ringAllReduce(link, { dtype: 'i32', op: 'avg', data: new Uint8Array(data.buffer), sequence });
      }),
    );
    for (let rank = 0; rank < W; rank++) {
      expect(sent[rank]!.map(({ first: _, ...send }) => send)).toEqual(documentedSends(rank, W, R, N, 4, sequence));
      const result = new Int32Array(results[rank]!.buffer, results[rank]!.byteOffset, N);
      expect(result.every((value) => value === 6)).toBe(true);
      // Reduce-scatter pieces carry partial sums; every all-gather piece is already divided.
      const allGather = sent[rank]!.filter((send) => Number((send.tag >> 12n) & 0xfffn) >= W - 1);
      expect(allGather.map((send) => send.first)).toEqual(allGather.map(() => 6));
    }
    expect(sent[0]![0]!.tag).toBe(0x5247_234567_000_000n);
  });
});
