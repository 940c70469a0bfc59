import { lastValueFrom, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ElementType } from '../../lib/protocol/element-type.js';
import type { Links } from '../../lib/transport/links/links.js';
import { receiveInto } from '../../lib/transport/links/receive-into.js';

/** Links whose one receive delivers `delivered(into)`, recording what was given back. */
function linksDelivering(delivered: (into: Uint8Array) => Uint8Array) {
  const released: Uint8Array[] = [];
  const links = {
    rank: 0,
    worldSize: 2,
    rails: 1,
    send: () => of(undefined),
    receive: (_rail: number, _peer: number, _tag: bigint, _shape: unknown, into?: Uint8Array) => of(delivered(into!)),
    release: (bytes: Uint8Array) => void released.push(bytes),
  } as unknown as Links;
  return { links, released };
}

const shape = { elementType: ElementType.U8, count: 3 };

describe('receiveInto (lib/transport/links/receive-into.ts)', () => {
  it('a payload the links wrote in place is the target: nothing copied, nothing given back', async () => {
    const { links, released } = linksDelivering((into) => into.fill(7));
    const target = new Uint8Array(3);
    expect(await lastValueFrom(receiveInto(links, 0, 1, 5n, shape, target))).toBe(target);
    expect(Array.from(target)).toEqual([7, 7, 7]);
    expect(released).toEqual([]);
  });

  it('a payload that came in other memory is copied into the target, and that memory goes back to the links', async () => {
    const pooled = Uint8Array.of(1, 2, 3);
    const { links, released } = linksDelivering(() => pooled);
    const target = new Uint8Array(3);
    expect(await lastValueFrom(receiveInto(links, 0, 1, 5n, shape, target))).toBe(target);
    expect(Array.from(target)).toEqual([1, 2, 3]);
    expect(released).toEqual([pooled]);
  });
});
