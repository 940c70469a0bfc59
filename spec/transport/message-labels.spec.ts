/**
 * Message labels on the native data plane's links (docs/protocol.md 9.9, "Message labels"; 9.6.6):
 * four real engines over loopback run the hierarchical all-gather, one of them listing its
 * messages in another order (relaying each block as soon as it is sent to a carrier, as an
 * implementation reading revision 5's text of 9.6.6 did). Every message has the same size and
 * the same collective, so before labels the other ranks folded the wrong blocks into their
 * results; now the receivers name the message that came where another was due, and no rank ends
 * with a wrong result.
 */
import fc from 'fast-check';
import { asyncScheduler, lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { hierarchicalAllGather } from '../../lib/collectives/all-gather/hierarchical.js';
import { descriptorOf } from '../../lib/collectives/descriptor.js';
import { carrierOf, hierarchicalIdentity, hierarchyOf } from '../../lib/collectives/hierarchical-family.js';
import { labelText, messageLabel } from '../../lib/collectives/schedule/message-label.js';
import { nativeCollective, settleNative } from '../../lib/collectives/schedule/plane-executor.js';
import { elements, type Schedule, type ScheduleInput, type ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import { WorldScheduleBuilder } from '../../lib/collectives/schedule/world-schedule-builder.js';
import type { CollectiveContext } from '../../lib/collectives/algorithm.js';
import { ProtocolError } from '../../lib/errors.js';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { DataPlane } from '../../lib/transport/data-plane.js';
import { LazyDeadlines } from '../../lib/transport/lazy-deadlines.js';
import { engineLinks, i32, inputOf, runOn } from '../helpers/data-plane-peer.js';

const engine = dataPlaneEngine();
const reason = engine === null ? ' (skipped: the native addon is not built here)' : '';
if (engine === null) console.warn('spec/transport/message-labels.spec.ts: skipped: the native addon is not built here');

const planes: DataPlane[] = [];
afterEach(() => {
  for (const plane of planes.splice(0)) plane.close();
});

const WORLD = 4;
const GROUPS = [
  [0, 1],
  [2, 3],
];
const COUNT = 3;

/**
 * The hierarchical all-gather's messages (one channel) with each relay listed right after the
 * send to its carrier, not after every block's first sends: the same messages, the same sizes,
 * each with its own label, in another order on the links from a carrier to its group.
 */
function relayingAtOnce(input: ScheduleInput): Schedule {
  const { worldSize, count, width } = input;
  const hierarchy = hierarchyOf(input);
  const world = new WorldScheduleBuilder(worldSize, hierarchicalIdentity(hierarchy.groups, 1));
  const block = elements('input', width, { start: 0, count });
  const slot = (owner: number) => elements('output', width, { start: owner * count, count });
  for (let owner = 0; owner < worldSize; owner++) {
    world.at(owner).copy(slot(owner), block);
    const home = hierarchy.groupOf[owner]!;
    for (const member of hierarchy.groups[home]!) if (member !== owner) world.transfer(owner, member, block, slot(owner), null, owner);
    hierarchy.groups.forEach((members, group) => {
      if (group === home) return;
      const carrier = carrierOf(hierarchy, group, hierarchy.positionOf[owner]!);
      const arrived = world.transfer(owner, carrier, block, slot(owner), null, owner);
      for (const member of members) if (member !== carrier) world.transfer(carrier, member, slot(owner), slot(owner), arrived, owner);
    });
  }
  return world.build(input.rank);
}

/** Rank `rank`'s context for settling its outcome (aborts recorded). */
function contextOf(rank: number, aborts: string[]): CollectiveContext {
  let next = 0n;
  return { rank, worldSize: WORLD, nextMeshSequence: () => next++, timeoutMs: () => 3_000, abort: (text: string) => aborts.push(text), peerLost: null, deadlines: new LazyDeadlines(asyncScheduler) } as unknown as CollectiveContext;
}

/** Runs the all-gather on four engines, rank r by `writers[r]`: each rank's outcome, settled, and its result. */
async function allGather(writers: readonly ScheduleOf[]) {
  const links = await engineLinks(WORLD);
  planes.push(...links.map(({ send, receive }, rank) => DataPlane.open(engine!, rank, WORLD, { rails: 1, send, receive })));
  const layout = hierarchicalIdentity(GROUPS, 1).layout;
  const outputs = writers.map(() => new Uint8Array(WORLD * COUNT * 4));
  const aborts: string[][] = writers.map(() => []);
  const settled = await Promise.all(
    writers.map(async (write, rank) => {
      const context = contextOf(rank, aborts[rank]!);
      const collective = nativeCollective(context, { opcode: Opcode.AllGather, elementType: ElementType.I32, elementCount: COUNT }, layout);
      const input = inputOf(rank, WORLD, COUNT, { groups: GROUPS });
      const outcome = await runOn(planes[rank]!, write, input, { input: i32(blockOf(rank)), output: outputs[rank]! }, collective, 3_000);
      return lastValueFrom(settleNative(outcome, context, collective, () => 'done' as const)).catch((error: unknown) => error as Error);
    }),
  );
  return { settled, outputs, aborts };
}

const blockOf = (rank: number) => Array.from({ length: COUNT }, (_, i) => rank * 100 + i);
const gathered = Array.from({ length: WORLD }, (_, rank) => blockOf(rank)).flat();

describe('a message label', () => {
  it('says its step, channel (up to 16383: a hierarchical schedule has a channel per share) and stripe, so two messages of one link never share one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xfff }), fc.integer({ min: 0, max: 0x3fff }), fc.integer({ min: 0, max: 63 }), (step, channel, stripe) => {
        const label = messageLabel({ step, channel, stripe });
        expect(label).toBeGreaterThanOrEqual(0);
        expect(label).toBeLessThanOrEqual(0xffffffff);
        expect(labelText(label)).toBe(`step ${step} channel ${channel} stripe ${stripe}`);
      }),
    );
    // Shares 64 apart, whose tags carry one channel, still have labels of their own.
    expect(messageLabel({ step: 0, channel: 66 })).not.toBe(messageLabel({ step: 0, channel: 2 }));
    // docs/protocol.md 9.9: bytes 28..31 of step 1 of channel 70's stripe 2.
    expect(Buffer.from(Uint32Array.of(messageLabel({ step: 1, channel: 70, stripe: 2 })).buffer).toString('hex')).toBe('01600801');
  });
});

describe.skipIf(engine === null)(`message labels on the native data plane${reason}`, () => {
  it('the hierarchical all-gather of 4 engines in two groups: every rank gathers every block', async () => {
    expect(descriptorOf({ opcode: Opcode.AllGather, elementType: ElementType.I32, elementCount: COUNT }, hierarchicalIdentity(GROUPS, 1).layout).layoutHash).not.toBe(0n);
    const { settled, outputs } = await allGather(Array(WORLD).fill(hierarchicalAllGather));
    expect(settled).toEqual(Array(WORLD).fill('done'));
    for (const output of outputs) expect(Array.from(new Int32Array(output.buffer))).toEqual(gathered);
  });

  it("a rank that sends the same messages in another order is named by the receivers (a PROTOCOL error with the link and both labels), and no rank keeps a wrong result", async () => {
    const writers = [hierarchicalAllGather, hierarchicalAllGather, relayingAtOnce, hierarchicalAllGather];
    const { settled, outputs, aborts } = await allGather(writers);
    // Rank 2 relays rank 0's block to rank 3 before its own; rank 3 expects its own first. Rank
    // 2's first message to its successor then waits for a peer, so the ring agreement (docs/protocol.md
    // 9.9) puts its header alone first on that link, which rank 3, following the honest schedule,
    // does not expect.
    const atThree = settled[3] as Error;
    expect(atThree).toBeInstanceOf(ProtocolError);
    expect(atThree.message).toBe('rank 2 sent collective 0 (AllGather) its header alone on its data link to rank 3, where rank 3 expects message step 0 channel 2 stripe 0');
    expect(aborts[3]).toEqual([atThree.message]);
    settled.forEach((result, rank) => {
      if (result === 'done') expect(Array.from(new Int32Array(outputs[rank]!.buffer)), `rank ${rank} finished: its result is right`).toEqual(gathered);
    });
  });
});
