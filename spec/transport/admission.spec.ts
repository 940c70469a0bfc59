/**
 * The admission of unauthenticated connections (lib/transport/admission.ts) against a reference
 * model: it never holds more than its cap, and past it evicts exactly the oldest connection of the
 * source holding the most, so one source's flood only shortens its own connections' lives.
 */
import { EventEmitter } from 'node:events';
import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Admission } from '../../lib/transport/admission.js';
import { createListener } from '../../lib/transport/tls-settings.js';
import type { RxcclError } from '../../lib/errors.js';

/** Just what the admission reads of a socket: its remote end, `close`, `destroy`. */
class FakeSocket extends EventEmitter {
  destroyedWith: Error | null | undefined = undefined;
  constructor(
    readonly remoteAddress: string,
    readonly remotePort: number,
  ) {
    super();
  }

  destroy(error?: Error): this {
    if (this.destroyedWith !== undefined) return this;
    this.destroyedWith = error ?? null;
    this.emit('close');
    return this;
  }
}

const asSocket = (fake: FakeSocket) => fake as unknown as Socket;

afterEach(() => {
  vi.useRealTimers();
});

type Step = { kind: 'arrive'; source: number } | { kind: 'authenticate'; pick: number } | { kind: 'hang-up'; pick: number };

const steps = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant('arrive' as const), source: fc.integer({ min: 0, max: 3 }) }),
    fc.record({ kind: fc.constant('authenticate' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('hang-up' as const), pick: fc.nat() }),
  ),
  { maxLength: 120 },
);

describe('Admission', () => {
  it('matches the model: at most cap held; past it, the oldest of the busiest source is evicted', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), steps, (cap, plan: Step[]) => {
        const dropped: RxcclError[] = [];
        const admission = new Admission({ cap, deadlineMs: 60_000, onDropped: (error) => dropped.push(error) });
        // The model: connections held, in arrival order.
        let held: FakeSocket[] = [];
        let port = 1;
        for (const step of plan) {
          if (step.kind === 'arrive') {
            const socket = new FakeSocket(`10.0.0.${step.source}`, port++);
            let victim: FakeSocket | undefined;
            if (held.length >= cap) {
              const counts = new Map<string, number>();
              for (const each of [...held, socket]) counts.set(each.remoteAddress, (counts.get(each.remoteAddress) ?? 0) + 1);
              const most = Math.max(...counts.values());
              // Of equally busy sources, the one whose oldest connection came first.
              victim = held.find((each) => counts.get(each.remoteAddress) === most);
            }
            admission.admit(asSocket(socket));
            if (victim !== undefined) {
              expect(victim.destroyedWith).toBeNull();
              held = held.filter((each) => each !== victim);
            }
            held.push(socket);
            expect(held.every((each) => each.destroyedWith === undefined)).toBe(true);
          } else if (held.length > 0) {
            const socket = held[step.pick % held.length]!;
            if (step.kind === 'authenticate') admission.authenticated(asSocket(socket));
            else socket.destroy();
            held = held.filter((each) => each !== socket);
          }
          expect(admission.size).toBe(held.length);
          expect(admission.size).toBeLessThanOrEqual(cap);
        }
        for (const socket of held) socket.destroy();
        expect(admission.size).toBe(0);
      }),
    );
  });

  it('an evicted connection already handed over fails with the reason; one in its TLS handshake is reported', () => {
    const dropped: string[] = [];
    const admission = new Admission({ cap: 2, deadlineMs: 60_000, onDropped: (error) => dropped.push(error.message) });
    const [first, second, third] = [1, 2, 3].map((port) => new FakeSocket('127.0.0.1', port));
    admission.admit(asSocket(first!));
    admission.handOver(asSocket(first!));
    admission.admit(asSocket(second!));
    admission.admit(asSocket(third!));
    expect(first!.destroyedWith?.message).toBe('too many unauthenticated connections (2): closed the oldest of the 2 from 127.0.0.1');
    admission.admit(asSocket(new FakeSocket('127.0.0.1', 4)));
    expect(second!.destroyedWith).toBeNull();
    expect(dropped).toEqual(['too many unauthenticated connections (2): closed the oldest of the 2 from 127.0.0.1']);
  });

  it('closes a connection still unauthenticated at its deadline, not one that authenticated', () => {
    vi.useFakeTimers();
    const admission = new Admission({ cap: 8, deadlineMs: 1_000 });
    const [silent, rank] = [1, 2].map((port) => new FakeSocket('127.0.0.1', port));
    admission.admit(asSocket(silent!));
    admission.handOver(asSocket(silent!));
    admission.admit(asSocket(rank!));
    admission.authenticated(asSocket(rank!));
    vi.advanceTimersByTime(999);
    expect(silent!.destroyedWith).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(silent!.destroyedWith?.message).toBe('no authentication within 1000 ms');
    expect(rank!.destroyedWith).toBeUndefined();
    expect(admission.size).toBe(0);
  });

  it('closes a connection that waits, unread, in a listener\'s queue (a peer listener before its mesh starts) without an unheard error', async () => {
    const admission = new Admission({ cap: 1, deadlineMs: 100 });
    const queued: Socket[] = [];
    const server = createListener(null, 1_000, admission, (socket) => queued.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as { port: number };
    try {
      // The second evicts the first; the second is closed at the deadline. Neither has a reader.
      const clients = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
      const closed = clients.map((client) => new Promise<void>((resolve) => client.on('error', () => undefined).on('close', () => resolve())));
      await Promise.all(closed);
      expect(queued).toHaveLength(2);
      expect(queued.every((socket) => socket.destroyed)).toBe(true);
      expect(admission.size).toBe(0);
    } finally {
      server.close();
    }
  });
});

