/** Many ranks' output into one destination: one listener at most, and backpressure as a pipe gives it. */
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { SharedOutput } from '../../lib/launch/shared-output.js';

/** A destination that takes one byte before it must drain, and drains when the test says. */
function slowDestination() {
  const written: string[] = [];
  const pending: (() => void)[] = [];
  const destination = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, callback) {
      written.push(chunk.toString());
      pending.push(callback);
    },
  });
  /** Completes every write, turn after turn, until none is left waiting. */
  const drainAll = async () => {
    while (pending.length > 0) {
      pending.splice(0).forEach((callback) => callback());
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { destination, written, drainAll };
}

describe('SharedOutput', () => {
  it('pauses each source whose chunk the destination could not take, with one drain listener for all, and resumes them on drain', async () => {
    const { destination, written, drainAll } = slowDestination();
    const output = new SharedOutput(destination);
    const sources = [new PassThrough(), new PassThrough(), new PassThrough()];
    for (const source of sources) output.add(source);
    sources.forEach((source, index) => source.write(`a${index}`));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sources.map((source) => source.isPaused())).toEqual([true, true, true]);
    expect(destination.listenerCount('drain')).toBe(1);
    sources.forEach((source, index) => source.write(`b${index}`));
    await drainAll();
    // Every chunk arrived, each source's in its order; nothing waits, no listener is left.
    expect([...written].sort()).toEqual(['a0', 'a1', 'a2', 'b0', 'b1', 'b2']);
    for (const index of [0, 1, 2]) expect(written.indexOf(`a${index}`)).toBeLessThan(written.indexOf(`b${index}`));
    expect(destination.listenerCount('drain')).toBe(0);
  });

  it('adds no listener to the destination while it takes every chunk', () => {
    const destination = new PassThrough().resume();
    const output = new SharedOutput(destination);
    const events = destination.eventNames().map((event) => [event, destination.listenerCount(event)]);
    for (let rank = 0; rank < 64; rank++) output.add(new PassThrough());
    expect(destination.eventNames().map((event) => [event, destination.listenerCount(event)])).toEqual(events);
  });
});
