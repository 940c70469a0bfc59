/**
 * A session's context is a frozen value it replaces wholesale as it learns its job (a probed
 * topology, its groups, an autotune profile: lib/session/session-context.ts), and each call takes
 * it once, when made (lib/session/collective-runner.ts): a context taken later, while the call
 * waits in the queue, never reaches it.
 */
import { Observable, of, Subject, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { resolveTuning } from '../../lib/collectives/tuning.js';
import type { Frame } from '../../lib/protocol/frame.js';
import { CollectiveRunner } from '../../lib/session/collective-runner.js';
import { EventLoopHold } from '../../lib/session/event-loop-hold.js';
import type { SessionEvent } from '../../lib/session/events.js';
import { sessionContext, type SessionContextParts } from '../../lib/session/session-context.js';
import { WaitingRanks } from '../../lib/collectives/waiting-ranks.js';
import { BufferPool } from '../../lib/transport/buffer-pool.js';
import { LazyDeadlines } from '../../lib/transport/lazy-deadlines.js';
import type { SessionLinks } from '../../lib/transport/links/links.js';
import { SessionFailure } from '../../lib/transport/session-failure.js';
import { CollectiveTopology } from '../../lib/topology/collective-topology.js';

const WORLD = 2;

/** Context parts of rank 0 of a 2-rank tcp_host_staged session whose coordinator says `name` answered each exchange. */
function contextParts(name: string, answered: string[], scheduler: VirtualTimeScheduler): SessionContextParts {
  return {
    rank: 0,
    worldSize: WORLD,
    transport: 'tcp_host_staged',
    tuning: resolveTuning({}, WORLD, {}),
    coordinator: {
      exchange: () => {
        answered.push(name);
        return of({} as Frame);
      },
    },
    scratch: new BufferPool(),
    nativePlane: null,
    timeoutMs: () => 10_000,
    nextMeshSequence: () => 0n,
    deadlines: new LazyDeadlines(scheduler),
    waiting: new WaitingRanks(),
    abort: () => undefined,
    peerLost: null,
  };
}

describe('a session context', () => {
  it('is frozen; a new view is a new context with schedules of its own, and the old one is unchanged', () => {
    const scheduler = new VirtualTimeScheduler();
    const parts = contextParts('first', [], scheduler);
    const first = sessionContext(parts);
    expect(Object.isFrozen(first)).toBe(true);
    expect(first.ringOrder).toEqual([0, 1]);
    const topology = CollectiveTopology.uniform(WORLD);
    const second = sessionContext(parts, { ...first, topology, ringOrder: [1, 0], topologyGroups: [[0], [1]], groupsAreHosts: true });
    expect([second.topology, second.ringOrder, second.topologyGroups, second.groupsAreHosts]).toEqual([topology, [1, 0], [[0], [1]], true]);
    expect(second.schedules).not.toBe(first.schedules);
    expect([first.topology, first.ringOrder, first.topologyGroups, first.groupsAreHosts]).toEqual([null, [0, 1], null, undefined]);
    expect(() => {
      (first as { ringOrder: readonly number[] }).ringOrder = [1, 0];
    }).toThrow(TypeError);
  });

  it('a collective runs in the context it was called in, though the session took another while it waited in the queue', () => {
    const scheduler = new VirtualTimeScheduler();
    const answered: string[] = [];
    let context = sessionContext(contextParts('first', answered, scheduler));
    const failure = new SessionFailure();
    const runner = new CollectiveRunner({
      transport: 'tcp_host_staged',
      links: { rank: 0, worldSize: WORLD } as SessionLinks,
      context: () => context,
      tuning: resolveTuning({}, WORLD, {}),
      plane: 'coordinator',
      ranksShareHost: false,
      failure,
      loop: new EventLoopHold([]),
      events: new Subject<SessionEvent>(),
      waiting: new WaitingRanks(),
      slowCollectiveMs: 30_000,
      warnings: null,
      scheduler,
      closedText: 'rank 0 session closed',
    });
    // A call ahead of it holds the queue.
    const ahead = new Subject<void>();
    runner.queued(() => new Observable<void>((subscriber) => ahead.subscribe(subscriber))).subscribe();
    const done: string[] = [];
    runner.submit('barrier', () => ({}), 0).subscribe({ complete: () => done.push('barrier') });
    // The session learns something (its probed links): a new context, with another coordinator.
    context = sessionContext(contextParts('second', answered, scheduler));
    ahead.complete();
    expect(done).toEqual(['barrier']);
    expect(answered).toEqual(['first']);
    // A call made now takes the new one.
    runner.submit('barrier', () => ({}), 0).subscribe();
    expect(answered).toEqual(['first', 'second']);
  });
});
