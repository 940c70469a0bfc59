/** An idle session's sockets do not hold the process; a pending operation's do, until a turn after it ends. */
import { Socket } from 'node:net';
import { NEVER, of, Subject, throwError } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { EventLoopHold } from '../../lib/session/event-loop-hold.js';
import type { PollClock } from '../../lib/transport/busy-window.js';

/** Sockets that record whether they are referenced. */
function fakeSockets(count: number) {
  const referenced = new Array<boolean>(count).fill(true);
  const sockets = referenced.map((_, index) => ({ ref: () => (referenced[index] = true), unref: () => (referenced[index] = false) }) as unknown as Socket);
  return { sockets, referenced };
}

describe('EventLoopHold', () => {
  it('unreferences every socket while idle and references them while an operation is pending, letting go a turn after the last ended', () => {
    const { clock, turn } = fakeClock();
    const { sockets, referenced } = fakeSockets(3);
    const hold = new EventLoopHold([sockets], 0, clock);
    expect(referenced).toEqual([false, false, false]);
    const first = new Subject<number>();
    const second = new Subject<number>();
    const a = first.pipe(hold.during()).subscribe();
    expect(referenced).toEqual([true, true, true]);
    const b = second.pipe(hold.during()).subscribe({ error: () => undefined });
    first.complete();
    turn();
    // The second operation still holds the process.
    expect(referenced).toEqual([true, true, true]);
    second.error(new Error('failed'));
    expect(referenced).toEqual([true, true, true]);
    turn();
    expect(referenced).toEqual([false, false, false]);
    expect(a.closed && b.closed).toBe(true);
  });

  it('keeps the sockets referenced for operations back to back within a turn: no socket is touched per operation', () => {
    const { clock, turn } = fakeClock();
    let touched = 0;
    const sockets = [0, 1].map(() => ({ ref: () => touched++, unref: () => touched++ }) as unknown as Socket);
    const hold = new EventLoopHold([sockets], 0, clock);
    touched = 0;
    for (let operation = 0; operation < 100; operation++) of(operation).pipe(hold.during()).subscribe();
    // Referenced once, for the first.
    expect(touched).toBe(2);
    // An operation that starts after a turn with none pending references them again.
    expect(turn()).toBe(1);
    expect(touched).toBe(4);
    of(1).pipe(hold.during()).subscribe();
    expect(touched).toBe(6);
  });

  it('lets go when an operation is abandoned, and holds nothing past a turn for one that ends at once', () => {
    const { clock, turn } = fakeClock();
    const { sockets, referenced } = fakeSockets(1);
    const hold = new EventLoopHold([sockets], 0, clock);
    const pending = NEVER.pipe(hold.during()).subscribe();
    expect(referenced).toEqual([true]);
    pending.unsubscribe();
    turn();
    expect(referenced).toEqual([false]);
    of(1).pipe(hold.during()).subscribe();
    throwError(() => new Error('refused')).pipe(hold.during()).subscribe({ error: () => undefined });
    turn();
    expect(referenced).toEqual([false]);
  });

  it('takes a socket added to one of its lists later (a link opened on demand) at the next change', () => {
    const { clock, turn } = fakeClock();
    const { sockets, referenced } = fakeSockets(2);
    const links: Socket[] = [];
    const hold = new EventLoopHold([[sockets[0]!], links], 0, clock);
    expect(referenced).toEqual([false, true]);
    const pending = NEVER.pipe(hold.during()).subscribe();
    links.push(sockets[1]!);
    pending.unsubscribe();
    turn();
    expect(referenced).toEqual([false, false]);
  });

  it('leaves a destroyed socket alone: 100 operations add no listener to it (Node would queue a ref per call for a "connect")', () => {
    const { clock, turn } = fakeClock();
    const closed = new Socket();
    closed.destroy();
    const hold = new EventLoopHold([[closed]], 0, clock);
    for (let operation = 0; operation < 100; operation++) {
      NEVER.pipe(hold.during()).subscribe().unsubscribe();
      turn();
    }
    expect(closed.listenerCount('connect')).toBe(0);
  });
});

/** A clock whose time the test sets and whose immediates it runs one turn at a time. */
function fakeClock() {
  const queue: (() => void)[] = [];
  const clock: PollClock & { time: number } = { time: 0, now: () => clock.time, immediate: (turn) => void queue.push(turn) };
  /** Runs the turns queued now (each may queue the next); returns how many ran. */
  const turn = () => queue.splice(0).map((run) => run()).length;
  return { clock, turn, queued: () => queue.length };
}

describe('EventLoopHold with a busy-poll window', () => {
  it('keeps the loop turning from an operation start until the window passes, then lets it sleep', () => {
    const { clock, turn, queued } = fakeClock();
    const hold = new EventLoopHold([], 0.05, clock);
    const pending = NEVER.pipe(hold.during()).subscribe();
    expect(queued()).toBe(1);
    clock.time = 0.049;
    expect(turn()).toBe(1);
    expect(queued()).toBe(1);
    clock.time = 0.05;
    turn();
    expect(queued()).toBe(0);
    // The operation is still pending, but the loop now waits for it asleep.
    expect(pending.closed).toBe(false);
    pending.unsubscribe();
  });

  it('stops as soon as nothing is pending, and a later operation starts a new window (one chain at a time)', () => {
    const { clock, turn, queued } = fakeClock();
    const hold = new EventLoopHold([], 0.05, clock);
    const operation = new Subject<void>();
    operation.pipe(hold.during()).subscribe();
    NEVER.pipe(hold.during()).subscribe().unsubscribe();
    expect(queued()).toBe(1);
    operation.complete();
    turn();
    expect(queued()).toBe(0);
    clock.time = 10;
    const next = NEVER.pipe(hold.during()).subscribe();
    clock.time = 10.04;
    turn();
    expect(queued()).toBe(1);
    next.unsubscribe();
    turn();
    expect(queued()).toBe(0);
  });

  it('never polls with a window of 0', () => {
    const { clock, queued } = fakeClock();
    const hold = new EventLoopHold([], 0, clock);
    NEVER.pipe(hold.during()).subscribe();
    expect(queued()).toBe(0);
  });
});
