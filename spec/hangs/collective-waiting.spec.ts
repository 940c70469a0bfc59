/**
 * A collective that waits long: the coordinator reports, every `slowCollectiveMs`, the ranks it
 * waits for and the last sequence and operation each rank submitted (exact, on a virtual clock).
 */
import { Subject, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { collectiveLoop } from '../../lib/coordinator/collective-loop.js';
import type { CoordinatorEvent } from '../../lib/coordinator/coordinator-events.js';
import { describeCoordinatorEvent } from '../../lib/coordinator/coordinator-events.js';
import { makeFrame, type Frame } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import type { FrameChannel } from '../../lib/transport/frame-channel.js';

const uniqueId = UniqueId.fromBytes(new Array(16).fill(5));
const request = (rank: number, sequence: bigint, opcode: Opcode, payload = new Uint8Array(0)) =>
  makeFrame({ uniqueId, opcode, sourceRank: rank, worldSize: 3, sequence, elementType: payload.length > 0 ? 1 : 0, elementCount: payload.length }, payload);

function loop(scheduler: VirtualTimeScheduler) {
  const inputs = Array.from({ length: 3 }, () => new Subject<Frame>());
  const channels = inputs.map((frames$) => ({ frames$, send: () => true }) as unknown as FrameChannel);
  const events: CoordinatorEvent[] = [];
  const sink = new Subject<CoordinatorEvent>();
  sink.subscribe((event) => events.push(event));
  collectiveLoop(channels, { uniqueId, timeoutMs: 10_000, scheduler, disconnectGraceMs: 5, events: sink, slowCollectiveMs: 300 }, { sequence: 0n }).subscribe({
    error: () => undefined,
  });
  return { inputs, events };
}

describe('a collective waiting past the threshold', () => {
  it('is reported every slowCollectiveMs with the missing ranks and where each rank is', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inputs, events } = loop(scheduler);
    for (const rank of [0, 1, 2]) inputs[rank]!.next(request(rank, 0n, Opcode.AllReduce, Uint8Array.of(rank, 0, 0, 0)));
    scheduler.schedule(() => inputs[0]!.next(request(0, 1n, Opcode.Broadcast)), 100);
    scheduler.schedule(() => inputs[2]!.next(request(2, 1n, Opcode.Broadcast)), 150);
    scheduler.maxFrames = 799;
    scheduler.flush();
    const waiting = events.filter((event) => event.type === 'collective-waiting');
    const report = {
      type: 'collective-waiting',
      sequence: 1,
      operation: 'Broadcast',
      missing: [1],
      ranks: [
        { rank: 0, sequence: 1, operation: 'Broadcast' },
        { rank: 1, sequence: 0, operation: 'AllReduce' },
        { rank: 2, sequence: 1, operation: 'Broadcast' },
      ],
    };
    expect(waiting).toEqual([
      { ...report, waitedMs: 300 },
      { ...report, waitedMs: 600 },
    ]);
    expect(describeCoordinatorEvent(waiting[0]!)).toBe(
      'collective sequence 1 Broadcast has waited 300 ms for ranks [1]; last submitted: rank 0 sequence 1 Broadcast, rank 1 sequence 0 AllReduce, rank 2 sequence 1 Broadcast',
    );
    // The first sequence's events: started by the first rank to submit, completed with the bytes routed.
    expect(events.slice(0, 2)).toEqual([
      { type: 'collective-started', sequence: 0, operation: 'AllReduce', rank: 0 },
      { type: 'collective-completed', sequence: 0, operation: 'AllReduce', bytes: 12, durationMs: 0 },
    ]);
  });

  it('stops reporting once the sequence completes, and names a rank that never submitted anything', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inputs, events } = loop(scheduler);
    inputs[1]!.next(request(1, 0n, Opcode.Barrier));
    scheduler.schedule(() => {
      inputs[0]!.next(request(0, 0n, Opcode.Barrier));
      inputs[2]!.next(request(2, 0n, Opcode.Barrier));
    }, 400);
    scheduler.maxFrames = 5_000;
    scheduler.flush();
    const waiting = events.filter((event) => event.type === 'collective-waiting');
    expect(waiting).toHaveLength(1);
    expect(waiting[0]).toMatchObject({ waitedMs: 300, missing: [0, 2], ranks: [{ rank: 0, sequence: null, operation: null }, { rank: 1, sequence: 0 }, { rank: 2, sequence: null }] });
    expect(events.at(-1)).toEqual({ type: 'collective-completed', sequence: 0, operation: 'Barrier', bytes: 0, durationMs: 400 });
  });
});
