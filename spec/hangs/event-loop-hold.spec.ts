/** An idle session's sockets do not hold the process; a pending operation's do, until it ends. */
import type { Socket } from 'node:net';
import { NEVER, of, Subject, throwError } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { EventLoopHold } from '../../lib/session/event-loop-hold.js';

/** Sockets that record whether they are referenced. */
function fakeSockets(count: number) {
  const referenced = new Array<boolean>(count).fill(true);
  const sockets = referenced.map((_, index) => ({ ref: () => (referenced[index] = true), unref: () => (referenced[index] = false) }) as unknown as Socket);
  return { sockets, referenced };
}

describe('EventLoopHold', () => {
  it('unreferences every socket while idle and references them while an operation is pending', () => {
    const { sockets, referenced } = fakeSockets(3);
    const hold = new EventLoopHold(sockets);
    expect(referenced).toEqual([false, false, false]);
    const first = new Subject<number>();
    const second = new Subject<number>();
    const a = first.pipe(hold.during()).subscribe();
    expect(referenced).toEqual([true, true, true]);
    const b = second.pipe(hold.during()).subscribe({ error: () => undefined });
    first.complete();
    // The second operation still holds the process.
    expect(referenced).toEqual([true, true, true]);
    second.error(new Error('failed'));
    expect(referenced).toEqual([false, false, false]);
    expect(a.closed && b.closed).toBe(true);
  });

  it('lets go when an operation is abandoned, and holds nothing for one that ends at once', () => {
    const { sockets, referenced } = fakeSockets(1);
    const hold = new EventLoopHold(sockets);
    const pending = NEVER.pipe(hold.during()).subscribe();
    expect(referenced).toEqual([true]);
    pending.unsubscribe();
    expect(referenced).toEqual([false]);
    of(1).pipe(hold.during()).subscribe();
    throwError(() => new Error('refused')).pipe(hold.during()).subscribe({ error: () => undefined });
    expect(referenced).toEqual([false]);
  });
});
