import { describe, expect, it } from 'vitest';
import { BufferPool } from '../../lib/transport/buffer-pool.js';

describe('BufferPool', () => {
  it('hands out views of exactly the requested size and reuses given-back memory', () => {
    const pool = new BufferPool(1024, 2);
    const first = pool.take(3000);
    expect(first.length).toBe(3000);
    expect(first.buffer.byteLength).toBe(4096);
    pool.give(first);
    const second = pool.take(2500);
    expect(second.buffer).toBe(first.buffer);
    expect(second.length).toBe(2500);
  });

  it('never takes back memory it did not make, a sub-view, or more than perClass buffers', () => {
    const pool = new BufferPool(1024, 1);
    const foreign = new Uint8Array(4096);
    pool.give(foreign);
    expect(pool.take(4096).buffer).not.toBe(foreign.buffer);
    const a = pool.take(4096);
    const b = pool.take(4096);
    pool.give(a.subarray(16));
    expect(pool.take(4096).buffer).not.toBe(a.buffer);
    pool.give(a);
    pool.give(b);
    pool.give(a);
    expect(pool.take(4096).buffer).toBe(a.buffer);
    expect(pool.take(4096).buffer).not.toBe(b.buffer);
  });

  it('keeps at most maxIdleBytes waiting in all', () => {
    const pool = new BufferPool(1024, 8, 3 * 4096);
    const views = Array.from({ length: 4 }, () => pool.take(4096));
    for (const view of views) pool.give(view);
    // Three fit; the fourth was dropped, so a fourth take allocates.
    const again = Array.from({ length: 4 }, () => pool.take(4096).buffer);
    expect(again.slice(0, 3).every((buffer) => views.some((view) => view.buffer === buffer))).toBe(true);
    expect(views.some((view) => view.buffer === again[3])).toBe(false);
    // What is taken again no longer counts as waiting: giving back makes room again.
    pool.give(new Uint8Array(again[0]!, 0, 4096));
    expect(pool.take(4096).buffer).toBe(again[0]);
  });

  it('leaves small requests to ordinary allocation', () => {
    const pool = new BufferPool(1024);
    const small = pool.take(100);
    expect(small.buffer.byteLength).toBe(100);
    pool.give(small);
    expect(pool.take(100).buffer).not.toBe(small.buffer);
  });
});
