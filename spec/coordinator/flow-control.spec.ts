/**
 * tcp_host_staged flow control: the coordinator bounds a rank's unmatched sends by withholding
 * acknowledgements, never by pausing its connection, so a rank whose sends wait keeps its lease
 * and its Abort is read at once; a rank that sends on regardless fails the session, named.
 */
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { P2pMatcher } from '../../lib/coordinator/p2p-matcher.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { makeFrame } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { rejection, sleep, startCoordinator, type TestJob } from '../helpers/job.js';

const LIMIT = 64 * 1024;
/**
 * Long enough that a busy machine's event-loop stall is not a lost lease (a full run with two
 * spec files per core pair saw a 246 ms one expire a 200 ms lease), short enough that a paused
 * connection would lose it within the test's three leases.
 */
const LEASE_MS = 1_000;

/** Jobs this file started; each test's are disposed after it. */
const jobs: TestJob[] = [];
afterEach(() => Promise.all(jobs.splice(0).map((job) => job.dispose())));

/** Two ranks on a coordinator with a low buffer limit and a heartbeat lease. */
async function limitedPair(): Promise<[RankSession, RankSession, TestJob]> {
  const job = await startCoordinator(2, { heartbeatTimeoutMs: LEASE_MS, p2pBufferLimitBytes: LIMIT, timeoutMs: 5_000 });
  jobs.push(job);
  const [zero, one] = await Promise.all([job.openRank(0), job.openRank(1)]);
  return [zero, one, job];
}

/** Watches a promise without awaiting it. */
function track(promise: Promise<unknown>) {
  const state = { settled: false };
  void promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

const bytes = (count: number, value: number) => new Uint8Array(count).fill(value);

describe('coordinator flow control (tcp_host_staged)', () => {
  it('a rank whose send waits unmatched keeps its lease; a receive takes the data and the send resolves', async () => {
    const [zero, one, job] = await limitedPair();
    await zero.send(1, 1, bytes(LIMIT, 1)); // within the limit: acknowledged at once
    const waiting = zero.send(1, 2, bytes(LIMIT, 2));
    const withheld = track(waiting);
    // Three leases long, both ranks heartbeat on the rail that carries rank 0's waiting data.
    const until = Date.now() + 3 * LEASE_MS;
    while (Date.now() < until) {
      const [toZero, toOne] = await Promise.all([zero.heartbeat(LEASE_MS), one.heartbeat(LEASE_MS)]);
      expect(toZero).toBeLessThan(LEASE_MS);
      expect(toOne).toBeLessThan(LEASE_MS);
      await sleep(LEASE_MS / 5);
    }
    expect(withheld.settled, 'the send past the limit was acknowledged before its receive').toBe(false);
    expect(Array.from((await one.receive(0, 2, { dtype: 'u8', count: LIMIT })) as Uint8Array).every((value) => value === 2)).toBe(true);
    await waiting;
    expect(Array.from((await one.receive(0, 1, { dtype: 'u8', count: LIMIT })) as Uint8Array).every((value) => value === 1)).toBe(true);
    await Promise.all([zero.close(), one.close()]);
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('the abort of a rank whose send waits unmatched reaches every rank at once', async () => {
    const [zero, one, job] = await limitedPair();
    await zero.send(1, 1, bytes(LIMIT, 1));
    const waiting = rejection(zero.send(1, 2, bytes(LIMIT, 2)));
    const pending = rejection(one.receive(0, 99, { dtype: 'u8', count: 1 }));
    await sleep(20);
    const started = Date.now();
    await zero.abort('flow-control failure injection');
    for (const error of await Promise.all([pending, waiting])) {
      expect(error.code).toBe('REMOTE_ABORT');
      expect(error.message).toContain('flow-control failure injection');
    }
    expect(Date.now() - started).toBeLessThan(1_000);
    await expect(job.coordinator.done).rejects.toThrow(/rank 0 aborted: flow-control failure injection/);
  });

  it('a rank that sends on without waiting for acknowledgements fails the session, named', async () => {
    const [zero, one, job] = await limitedPair();
    const failures = [zero, one].map((session) => rejection(firstValueFrom(session.failure$)));
    // Not awaited one by one: the second waits withheld, the third would be a second withheld one over the limit.
    const sends = await rejection(Promise.all([1, 2, 3].map((tag) => zero.send(1, tag, bytes(LIMIT, tag)))));
    const expected =
      `point-to-point rank 0 has ${2 * LIMIT} bytes of sends waiting unacknowledged on rail 0 (tags 2, 3), ` +
      `over the limit of ${LIMIT} bytes: its sends do not wait for their acknowledgements; await each send, or post the receives first`;
    expect(sends.message).toContain(expected);
    for (const error of await Promise.all(failures)) {
      expect(error.code).toBe('REMOTE_ABORT');
      expect(error.message).toContain(expected);
    }
    await expect(job.coordinator.done).rejects.toThrow(expected);
  });

  it('refuses a p2pBufferLimitBytes that is not a positive integer', async () => {
    for (const limit of [0, -1, 1.5, Number.NaN]) {
      await expect(Coordinator.listen({ uniqueId: UniqueId.random(), worldSize: 1, p2pBufferLimitBytes: limit }, {})).rejects.toThrow(
        `p2pBufferLimitBytes must be a positive integer number of bytes, got ${limit}`,
      );
    }
  });
});

describe('P2pMatcher: withheld sends are bounded', () => {
  const uniqueId = UniqueId.fromBytes(new Array(16).fill(2));
  const send = (tag: bigint, sequence: bigint, count: number) =>
    makeFrame(
      { uniqueId, opcode: Opcode.Send, elementType: ElementType.U8, sourceRank: 0, destinationRank: 1, worldSize: 2, tag, sequence, elementCount: count },
      new Uint8Array(count),
    );

  it('one withheld send of any size is kept: a rank that awaits each send never fails', () => {
    const matcher = new P2pMatcher(uniqueId, 2, 8, 3);
    expect(matcher.route(0, send(1n, 0n, 8))).toHaveLength(1);
    expect(matcher.route(0, send(2n, 1n, 100))).toEqual([]);
    expect(matcher.withheldBy(0)).toBe(100);
    expect(matcher.bufferedBy(0)).toBe(108);
  });

  it('several withheld sends within the limit are kept; past it the session fails naming rank, rail, tags and limit', () => {
    const matcher = new P2pMatcher(uniqueId, 2, 8, 3);
    matcher.route(0, send(1n, 0n, 8));
    expect(matcher.route(0, send(5n, 1n, 4))).toEqual([]);
    expect(matcher.route(0, send(4n, 2n, 4))).toEqual([]);
    expect(matcher.withheldBy(0)).toBe(8);
    expect(() => matcher.route(0, send(5n, 3n, 1))).toThrow(
      'point-to-point rank 0 has 9 bytes of sends waiting unacknowledged on rail 3 (tags 4, 5), over the limit of 8 bytes',
    );
  });
});
