/**
 * Exact timing of the coordinator's loops on a virtual clock: the collective timeout and the
 * heartbeat lease are timer streams on an injected scheduler, so no real time passes here.
 */
import { Subject, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { collectiveLoop } from '../../lib/coordinator/collective-loop.js';
import { p2pRouter } from '../../lib/coordinator/p2p-router.js';
import { makeFrame, type Frame } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import type { FrameChannel, OutgoingFrame } from '../../lib/transport/frame-channel.js';

const uniqueId = UniqueId.fromBytes(new Array(16).fill(3));

/** Stand-ins for rank connections: frames are pushed by the test, writes are recorded. */
function fakeChannels(worldSize: number) {
  const inputs = Array.from({ length: worldSize }, () => new Subject<Frame>());
  const sent: OutgoingFrame[][] = Array.from({ length: worldSize }, () => []);
  const channels = inputs.map((frames$, rank) => {
    const send = (frame: OutgoingFrame) => (sent[rank]!.push(frame), true);
    return { frames$, send, sendInFragments: send } as unknown as FrameChannel;
  });
  return { inputs, sent, channels };
}

function outcome(observable: ReturnType<typeof collectiveLoop>, scheduler: VirtualTimeScheduler) {
  const result: { error?: Error & { code?: string }; completed?: boolean; at?: number } = {};
  observable.subscribe({
    error: (error: Error) => Object.assign(result, { error, at: scheduler.now() }),
    complete: () => Object.assign(result, { completed: true, at: scheduler.now() }),
  });
  return result;
}

const request = (rank: number, sequence: bigint, opcode = Opcode.Barrier, tag = 0n) =>
  makeFrame({ uniqueId, opcode, sourceRank: rank, worldSize: 3, sequence, tag });

describe('collective timeout on a virtual clock', () => {
  it('fires exactly timeoutMs after the first request of a sequence and names the missing ranks', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inputs, channels } = fakeChannels(3);
    const result = outcome(collectiveLoop(channels, { uniqueId, timeoutMs: 100, scheduler, disconnectGraceMs: 5 }, { sequence: 0n }), scheduler);
    // Idle time before the first request does not count.
    scheduler.schedule(() => inputs[1]!.next(request(1, 0n)), 1_000);
    scheduler.schedule(() => expect(result.error).toBeUndefined(), 1_099);
    scheduler.flush();
    expect(result.error?.code).toBe('TIMEOUT');
    expect(result.error?.message).toBe('collective sequence 0; missing ranks [0,2] timed out');
    expect(result.at).toBe(1_100);
  });

  it('SetTimeout governs every later sequence', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inputs, sent, channels } = fakeChannels(3);
    const result = outcome(collectiveLoop(channels, { uniqueId, timeoutMs: 10_000, scheduler, disconnectGraceMs: 5 }, { sequence: 0n }), scheduler);
    for (const rank of [0, 1, 2]) inputs[rank]!.next(request(rank, 0n, Opcode.SetTimeout, 40n));
    expect(sent.map((frames) => frames.map((frame) => frame.header.opcode))).toEqual([[Opcode.SetTimeout], [Opcode.SetTimeout], [Opcode.SetTimeout]]);
    inputs[2]!.next(request(2, 1n));
    scheduler.flush();
    expect(result.error?.message).toBe('collective sequence 1; missing ranks [0,1] timed out');
    expect(result.at).toBe(40);
  });

  it('a complete sequence cancels its timer; all ranks leaving completes the loop', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inputs, channels } = fakeChannels(3);
    const result = outcome(collectiveLoop(channels, { uniqueId, timeoutMs: 50, scheduler, disconnectGraceMs: 5 }, { sequence: 0n }), scheduler);
    for (const rank of [0, 1, 2]) inputs[rank]!.next(request(rank, 0n));
    scheduler.flush();
    expect(result.error).toBeUndefined();
    for (const input of inputs) input.complete();
    expect(result.completed).toBe(true);
  });

  it('a rank that disconnects mid-sequence fails the loop after the grace, naming it', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inputs, channels } = fakeChannels(3);
    const result = outcome(collectiveLoop(channels, { uniqueId, timeoutMs: 1_000, scheduler, disconnectGraceMs: 25 }, { sequence: 0n }), scheduler);
    inputs[0]!.next(request(0, 0n));
    inputs[2]!.complete();
    scheduler.flush();
    expect(result.error?.message).toBe('rank 2 disconnected during collective sequence 0');
    expect(result.at).toBe(25);
  });
});

describe('heartbeat lease on a virtual clock', () => {
  const heartbeat = (rank: number, sequence: bigint) => makeFrame({ uniqueId, opcode: Opcode.Heartbeat, sourceRank: rank, worldSize: 2, sequence });

  it('expires a silent rank once its last contact is timeout ms old, checked every timeout/4', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inputs, sent, channels } = fakeChannels(2);
    const result = outcome(p2pRouter(channels, { uniqueId, heartbeatTimeoutMs: 100, scheduler }), scheduler);
    // Rank 0 renews its lease every 30 ms; rank 1 never speaks.
    for (let time = 30; time <= 300; time += 30) scheduler.schedule(() => inputs[0]!.next(heartbeat(0, BigInt(time))), time);
    scheduler.flush();
    expect(result.error?.code).toBe('TIMEOUT');
    expect(result.error?.message).toBe('heartbeat lease for rank 1; last contact 100 ms ago timed out');
    expect(result.at).toBe(100);
    expect(sent[0]!.length).toBe(3); // heartbeats at 30, 60, 90 were answered
  });

  it('every header renews a lease: a rank whose long message arrives fragment by fragment stays alive', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inputs, channels } = fakeChannels(2);
    const result = outcome(p2pRouter(channels, { uniqueId, heartbeatTimeoutMs: 100, scheduler }), scheduler);
    // Rank 1 sends nothing whole for 300 ms, but a fragment's header arrives every 60 ms; rank 0 heartbeats.
    const fragmentHeader = makeFrame({ uniqueId, opcode: Opcode.Send, sourceRank: 1, destinationRank: 0, worldSize: 2 }).header;
    for (let time = 60; time <= 300; time += 60) scheduler.schedule(() => channels[1]!.admitHeader(fragmentHeader), time);
    for (let time = 30; time <= 600; time += 30) scheduler.schedule(() => inputs[0]!.next(heartbeat(0, BigInt(time))), time);
    scheduler.schedule(() => expect(result.error).toBeUndefined(), 399);
    scheduler.flush();
    // Then silent: its lease runs out 100 ms after the last header.
    expect(result.error?.message).toBe('heartbeat lease for rank 1; last contact 100 ms ago timed out');
    expect(result.at).toBe(400);
  });

  it('LEAVE ends the lease; closing without LEAVE is a failure when leases are on', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inputs, channels } = fakeChannels(2);
    const result = outcome(p2pRouter(channels, { uniqueId, heartbeatTimeoutMs: 100, scheduler }), scheduler);
    inputs[0]!.next(makeFrame({ uniqueId, opcode: Opcode.Leave, sourceRank: 0, worldSize: 2 }));
    inputs[0]!.complete();
    scheduler.schedule(() => inputs[1]!.complete(), 50);
    scheduler.flush();
    expect(result.error?.message).toBe('point-to-point rank 1 disconnected without LEAVE');
  });
});
