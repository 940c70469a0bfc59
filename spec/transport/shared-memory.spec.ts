/**
 * Shared memory between ranks of one host (native/shared_memory_links.h; docs/protocol.md 9.10):
 * engines whose links agreed to a ring move every header through it (a payload of up to 8 KiB in
 * line, a larger one in fragments unless single copy carries it), and every schedule is exact whichever ranks turned shared memory or single copy off, over
 * calls enough to wrap the rings; each link agrees exactly where both its ends take part, and a
 * rank that refused says why; a receiver that cannot take the segment (pidfd_getfd refused, as
 * under a seccomp filter) says so and keeps TCP, exact; a rank whose peer is 20 ms late every call
 * sleeps on its doorbell, not spinning; a collective whose peer's messages are in its ring already
 * makes no system call to look at its links; and a rank whose peer's engine goes away
 * while it waits on the ring fails naming that peer. The engines all live in this process (the
 * segment passes through the same system calls as between processes: spec/process covers those).
 */
import { readdirSync, readlinkSync } from 'node:fs';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { allPairsAllReduce } from '../../lib/collectives/all-reduce/all-pairs.js';
import { pairwiseAllReduce } from '../../lib/collectives/all-reduce/pairwise.js';
import { ringAllReduce } from '../../lib/collectives/all-reduce/ring.js';
import { ringAllGather } from '../../lib/collectives/all-gather/ring.js';
import { chainBroadcast } from '../../lib/collectives/broadcast/chain.js';
import { descriptorOf } from '../../lib/collectives/descriptor.js';
import { withHeaderExchange } from '../../lib/collectives/schedule/header-exchange.js';
import type { NativeCollective } from '../../lib/collectives/schedule/plane-executor.js';
import type { ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import { dataPlaneEngine, loadAddon } from '../../lib/kernels/addon.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { DataPlane } from '../../lib/transport/data-plane.js';
import { selfReads } from '../helpers/cross-memory.js';
import { engineLinks, i32, inputOf, runOn } from '../helpers/data-plane-peer.js';

const engine = dataPlaneEngine();
const addon = engine === null ? null : loadAddon();
const available = engine !== null && typeof addon?.failSharedMemoryJoins === 'function';
// The receiver verifies its sender by reading its memory, as single copy does.
const reads = selfReads();
const reason = !available ? ' (skipped: the native addon is not built here)' : reads.allowed ? '' : ` (skipped: ${reads.reason})`;
if (reason !== '') console.warn(`spec/transport/shared-memory.spec.ts: skipped:${reason}`);

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  addon?.failSharedMemoryJoins?.(0);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `worldSize` engines on one host, rank r offering and mapping rings where `sharedMemory[r]`, reading in place where `singleCopy[r]`. */
async function planesOnOneHost(sharedMemory: readonly boolean[], singleCopy: readonly boolean[] = sharedMemory.map(() => true)): Promise<DataPlane[]> {
  const worldSize = sharedMemory.length;
  const sockets = await engineLinks(worldSize);
  const planes = sockets.map(({ send, receive }, rank) =>
    DataPlane.open(engine!, rank, worldSize, { rails: 1, send, receive }, {
      sameHost: Array.from({ length: worldSize }, (_, r) => r).filter((r) => r !== rank),
      sharedMemory: sharedMemory[rank],
      singleCopy: singleCopy[rank],
    }),
  );
  cleanups.push(() => {
    for (const plane of planes) plane.close();
    for (const { send, receive } of sockets) for (const socket of [...send, ...receive]) socket?.destroy();
  });
  return planes;
}

type Kind = 'all-reduce' | 'broadcast' | 'all-gather';
const collectiveOf = (kind: Kind, layout: string, count: number, root: number, sequence: bigint): NativeCollective => ({
  number: sequence,
  own:
    kind === 'broadcast'
      ? descriptorOf({ opcode: Opcode.Broadcast, elementType: ElementType.I32, elementCount: count, rootRank: root }, layout)
      : kind === 'all-gather'
        ? descriptorOf({ opcode: Opcode.AllGather, elementType: ElementType.I32, elementCount: count }, layout)
        : descriptorOf({ opcode: Opcode.AllReduce, elementType: ElementType.I32, elementCount: count, reduceOp: 1 }, layout),
});

/** Runs `calls` collectives of `kind` in a row on `planes` and checks each rank's result element by element. */
async function runExactly(planes: DataPlane[], [name, write, kind]: [string, ScheduleOf, Kind], count: number, calls: number, root = 0): Promise<void> {
  const worldSize = planes.length;
  for (let call = 0; call < calls; call++) {
    const inputs = planes.map((_, rank) => i32(Array.from({ length: count }, (_, i) => (rank + 1) * i - 7 * rank + call)));
    const outputs = planes.map(() => new Uint8Array(count * 4 * (kind === 'all-gather' ? worldSize : 1)));
    const collective = collectiveOf(kind, name, count, root, BigInt(call));
    const outcomes = await Promise.all(
      planes.map((plane, rank) =>
        runOn(plane, write, inputOf(rank, worldSize, count, { root: kind === 'broadcast' ? root : null }), { input: inputs[rank]!, output: outputs[rank]! }, collective, 20_000),
      ),
    );
    expect(outcomes).toEqual(planes.map(() => undefined));
    const expected =
      kind === 'broadcast'
        ? new Int32Array(inputs[root]!.buffer)
        : kind === 'all-gather'
          ? Int32Array.from(inputs.flatMap((input) => Array.from(new Int32Array(input.buffer))))
          : Int32Array.from({ length: count }, (_, i) => inputs.reduce((sum, input) => sum + new Int32Array(input.buffer)[i]!, 0));
    for (const [rank, output] of outputs.entries()) {
      if (kind === 'broadcast' && rank === root) continue;
      const got = new Int32Array(output.buffer);
      const wrong = got.findIndex((value, i) => value !== expected[i]);
      expect(wrong === -1 ? null : `element ${wrong}: ${got[wrong]}, expected ${expected[wrong]}`, `${name}, ${count} elements, call ${call}, rank ${rank}`).toBeNull();
    }
  }
}

/** The peers `rank` sends to and receives from in `write`'s schedule with the plane's header exchange. */
function linkPeers(write: ScheduleOf, kind: Kind, worldSize: number, rank: number, count: number) {
  const headed = withHeaderExchange((of) => write(inputOf(of, worldSize, count, { root: kind === 'broadcast' ? 0 : null })), worldSize, rank);
  const sorted = (peers: number[]) => [...new Set(peers)].sort((a, b) => a - b);
  return { sends: sorted(headed.sends.map(({ peer }) => peer)), receives: sorted(headed.receives.map(({ peer }) => peer)) };
}

/** The descriptors this process holds that are memfds (a ring's segment before both sides mapped it). */
const memfds = () =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith('/memfd:rxccl-ring');
    } catch {
      return false;
    }
  });

const schedules: [string, ScheduleOf, Kind][] = [
  ['pairwise', pairwiseAllReduce, 'all-reduce'],
  ['ring', ringAllReduce, 'all-reduce'],
  ['chain', chainBroadcast, 'broadcast'],
  ['ring', ringAllGather, 'all-gather'],
];

describe.skipIf(reason !== '')(`shared memory between the native data plane's engines of one host${reason}`, () => {
  it('every schedule is exact over rings, whichever ranks turned shared memory or single copy off; a link agrees exactly where both ends take part, and a refusing end says so', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ shared: fc.boolean(), single: fc.boolean() }), { minLength: 2, maxLength: 3 }),
        fc.constantFrom(...schedules),
        // In a slot (up to 8 KiB a message), past it (in fragments), around a slot's 8 KiB, a full
        // ring's 128 KiB and single copy's 256 KiB (i32 elements), past the last.
        fc.oneof(
          fc.integer({ min: 1, max: 2100 }),
          fc.integer({ min: 2100, max: 20_000 }),
          fc.constantFrom(2047, 2048, 2049, 32_767, 32_768, 32_769, 65_535, 65_536, 70_000),
        ),
        async (ranks, schedule, count) => {
          const planes = await planesOnOneHost(
            ranks.map((r) => r.shared),
            ranks.map((r) => r.single),
          );
          // 40 small calls wrap a ring of 32 slots.
          await runExactly(planes, schedule, count, count > 20_000 ? 2 : 40);
          const [, write, kind] = schedule;
          for (const [rank, plane] of planes.entries()) {
            const { sends, receives } = linkPeers(write, kind, ranks.length, rank, count);
            const both = (peers: number[]) => peers.filter((peer) => ranks[rank]!.shared && ranks[peer]!.shared);
            const refused = receives.filter((peer) => !ranks[rank]!.shared && ranks[peer]!.shared).map((peer) => ({ peer, reason: 'shared memory is off here' }));
            expect(plane.sharedMemoryPeers(), `rank ${rank} of ${JSON.stringify(ranks)}`).toEqual({ writesTo: both(sends), readsFrom: both(receives), refused });
          }
          // A segment's descriptors go once both sides mapped it, or (a link no message took yet) with the planes.
          await cleanups.pop()!();
          expect(memfds()).toEqual([]);
        },
      ),
      { numRuns: 12 },
    );
  }, 240_000);

  it('a receiver that cannot take the segment (pidfd_getfd refused, as under a seccomp filter) says so and keeps TCP, exact', async () => {
    addon!.failSharedMemoryJoins!(1);
    const planes = await planesOnOneHost([true, true]);
    await runExactly(planes, schedules[0]!, 256, 3);
    for (const [rank, plane] of planes.entries()) {
      expect(plane.sharedMemoryPeers()).toEqual({
        writesTo: [],
        readsFrom: [],
        refused: [{ peer: 1 - rank, reason: "cannot map its peer's ring: pidfd_getfd: Operation not permitted (forced for a test)" }],
      });
    }
    // The writer dropped the ring the receiver never mapped: no segment is left.
    expect(memfds()).toEqual([]);
  });

  it('a rank whose peer comes 20 ms late every call sleeps on its doorbell: under 0.3 s of CPU for 100 calls (both ranks, this process)', async () => {
    const planes = await planesOnOneHost([true, true]);
    await runExactly(planes, schedules[0]!, 2, 1);
    expect(planes[0]!.sharedMemoryPeers()!.readsFrom).toEqual([1]);
    const run = (rank: number, call: number) =>
      runOn(planes[rank]!, pairwiseAllReduce, inputOf(rank, 2, 2), { input: i32([rank, call]), output: new Uint8Array(8) }, collectiveOf('all-reduce', 'pairwise', 2, 0, BigInt(call)), 5_000);
    const before = process.cpuUsage();
    for (let call = 1; call <= 100; call++) {
      const early = run(0, call);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await Promise.all([early, run(1, call)])).toEqual([undefined, undefined]);
    }
    const used = process.cpuUsage(before);
    // The adaptive spin (native/spin_budget.h) spins its 20 ms a few calls, then 50 us a call.
    expect((used.user + used.system) / 1e6).toBeLessThan(0.3);
  }, 60_000);

  it("a collective whose peer's messages are in its ring already is done without a system call to look at its links (no poll), exact", async () => {
    const planes = await planesOnOneHost([true, true]);
    const allPairs: [string, ScheduleOf, Kind] = ['all-pairs', allPairsAllReduce, 'all-reduce'];
    await runExactly(planes, allPairs, 2, 1);
    expect(planes[0]!.sharedMemoryPeers()!.readsFrom).toEqual([1]);
    // All-pairs at 2 ranks: one message each way, which leaves at once.
    const run = (rank: number, call: number, output: Uint8Array) =>
      runOn(planes[rank]!, allPairsAllReduce, inputOf(rank, 2, 2), { input: i32([rank, call]), output }, collectiveOf('all-reduce', 'all-pairs', 2, 0, BigInt(call)), 20_000);
    for (let call = 1; call <= 10; call++) {
      const outputs = [new Uint8Array(8), new Uint8Array(8)];
      // Rank 1 writes its message into the ring and waits for rank 0's; rank 0 comes later.
      const first = run(1, call, outputs[1]!);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const polls = planes[0]!.polls();
      expect(await Promise.all([run(0, call, outputs[0]!), first])).toEqual([undefined, undefined]);
      expect(planes[0]!.polls(), `call ${call}`).toBe(polls);
      for (const output of outputs) expect(Array.from(new Int32Array(output.buffer))).toEqual([1, 2 * call]);
    }
  });

  it("a rank waiting on its ring fails naming the peer whose engine went away (its links closed), and the ring's memory goes with the planes", async () => {
    const planes = await planesOnOneHost([true, true]);
    await runExactly(planes, schedules[0]!, 2, 1);
    expect(planes[0]!.sharedMemoryPeers()!.readsFrom).toEqual([1]);
    // Rank 0 waits for rank 1's next message in the ring; rank 1 never runs it and its links close.
    const waiting = runOn(planes[0]!, pairwiseAllReduce, inputOf(0, 2, 2), { input: i32([1, 2]), output: new Uint8Array(8) }, collectiveOf('all-reduce', 'pairwise', 2, 0, 1n), 20_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    planes[1]!.close();
    expect(await waiting).toMatchObject({ kind: 'peer-closed', peer: 1 });
  });
});
