/**
 * Object messages (#49 item 5): any structured-cloneable value through sendObject/receiveObject and
 * broadcastObject/allGatherObject/gatherObject, on both transports; refusals (over the limit, not
 * serializable) as typed errors on every rank that would have received the value, with the
 * collective completing.
 */
import { deserialize, serialize } from 'node:v8';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANY_COUNT, MAX_FRAME_PAYLOAD_BYTES } from '../../lib/protocol/constants.js';
import { objectLimit } from '../../lib/session/object-collectives.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { rejection, startJob, type TestJob } from '../helpers/job.js';

/** What a value becomes on the other side: its structured clone. */
const cloned = (value: unknown) => deserialize(serialize(value));

/** Values of many shapes: nested objects and arrays, Map, Set, Date, typed arrays, bigint, boxed values, sparse arrays. */
const anyValue = fc.anything({
  maxDepth: 3,
  withBigInt: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withTypedArray: true,
  withSparseArray: true,
  withBoxedValues: true,
});

type Job = TestJob & { sessions: RankSession[] };
const JOBS: readonly (readonly [CollectiveTransport, number])[] = [
  ['tcp_host_staged', 2],
  ['tcp_host_staged', 3],
  ['tcp_peer', 2],
  ['tcp_peer', 4],
];
const jobs = new Map<string, Job>();
beforeAll(async () => {
  for (const [transport, worldSize] of JOBS) jobs.set(`${transport} ${worldSize}`, await startJob(worldSize, { transport, timeoutMs: 20_000 }));
}, 60_000);
afterAll(async () => {
  await Promise.all([...jobs.values()].map((job) => job.dispose()));
});

describe.each(JOBS)('object messages on %s with %i ranks', (transport, worldSize) => {
  const sessionsOf = () => jobs.get(`${transport} ${worldSize}`)!.sessions;

  it('sendObject/receiveObject: any value arrives as its structured clone, from one rank or any', async () => {
    const sessions = sessionsOf();
    await fc.assert(
      fc.asyncProperty(anyValue, fc.boolean(), async (value, anySource) => {
        const last = sessions[worldSize - 1]!;
        const [, received] = await Promise.all([sessions[0]!.sendObject(worldSize - 1, 11, value), last.receiveObject(anySource ? null : 0, 11)]);
        expect(received).toEqual(cloned(value));
      }),
      { numRuns: 25 },
    );
  });

  it('a receive of ANY_COUNT elements takes a message of any length', async () => {
    const sessions = sessionsOf();
    for (const length of [0, 3, 1000]) {
      const [, received] = await Promise.all([
        sessions[0]!.send(worldSize - 1, 12, Int32Array.from({ length }, (_, index) => index)),
        sessions[worldSize - 1]!.receive(0, 12, { dtype: 'i32', count: ANY_COUNT }),
      ]);
      expect(Array.from(received)).toEqual(Array.from({ length }, (_, index) => index));
    }
  });

  it('broadcastObject, allGatherObject, gatherObject: every rank gets every value as its structured clone', async () => {
    const sessions = sessionsOf();
    await fc.assert(
      fc.asyncProperty(fc.array(anyValue, { minLength: worldSize, maxLength: worldSize }), fc.nat(worldSize - 1), async (values, root) => {
        const broadcast = await Promise.all(sessions.map((session) => session.broadcastObject(session.rank === root ? values[root] : undefined, root)));
        for (const value of broadcast) expect(value).toEqual(cloned(values[root]));
        const gatheredAll = await Promise.all(sessions.map((session) => session.allGatherObject(values[session.rank])));
        for (const perRank of gatheredAll) expect(perRank).toEqual(values.map(cloned));
        const gathered = await Promise.all(sessions.map((session) => session.gatherObject(values[session.rank], root)));
        gathered.forEach((result, rank) => expect(result).toEqual(rank === root ? values.map(cloned) : null));
      }),
      { numRuns: 15 },
    );
  });

  it('a value v8 refuses fails every rank that would receive it, naming the rank, and the collective completes', async () => {
    const sessions = sessionsOf();
    const refusing = worldSize - 1;
    const valueOf = (rank: number) => (rank === refusing ? { step: 1, callback: () => rank } : { step: 1 });
    const allGather = await Promise.all(sessions.map((session) => rejection(session.allGatherObject(valueOf(session.rank)))));
    for (const error of allGather) {
      expect(error.code).toBe('NOT_SERIALIZABLE');
      expect(error).toMatchObject({ rank: refusing });
      expect(error.message).toContain(`allGatherObject: rank ${refusing}'s value cannot be serialized (structured clone): `);
      expect(error.message).toContain('could not be cloned');
    }
    // The refusing rank's own error keeps v8's as its cause.
    expect((allGather[refusing] as Error & { cause?: unknown }).cause).toBeInstanceOf(Error);
    // gather: the root and the refusing rank fail, the others complete.
    const gather = await Promise.all(sessions.map((session) => session.gatherObject(valueOf(session.rank), 0).then(() => 'ok', (error: Error & { code?: string }) => error.code)));
    gather.forEach((outcome, rank) => expect(outcome).toBe(rank === 0 || rank === refusing ? 'NOT_SERIALIZABLE' : 'ok'));
    const broadcast = await Promise.all(sessions.map((session) => rejection(session.broadcastObject(Symbol('not cloneable'), 0))));
    for (const error of broadcast) expect(error).toMatchObject({ code: 'NOT_SERIALIZABLE', rank: 0 });
    // Every rank took part: the next collective still lines up.
    const after = await Promise.all(sessions.map((session) => session.allGatherObject(session.rank)));
    for (const perRank of after) expect(perRank).toEqual(Array.from({ length: worldSize }, (_, rank) => rank));
  });

  it('sendObject refuses a value v8 cannot serialize before anything is sent', async () => {
    const sessions = sessionsOf();
    const error = await rejection(sessions[0]!.sendObject(1, 12, { run: () => 1 }));
    expect(error).toMatchObject({ code: 'NOT_SERIALIZABLE', rank: 0 });
    expect(error.message).toMatch(/^sendObject: rank 0's value cannot be serialized \(structured clone\): /);
    // Nothing went: the next object on that tag is the one received.
    await Promise.all([sessions[0]!.sendObject(1, 12, 'next'), expect(sessions[1]!.receiveObject(0, 12)).resolves.toBe('next')]);
  });
});

describe('receiveObject of a message no sendObject sent', () => {
  it('is a configuration error naming the tag and v8 reason', async () => {
    const sessions = jobs.get('tcp_peer 2')!.sessions;
    await sessions[0]!.send(1, 14, Uint8Array.of(0, 1, 2));
    const error = await rejection(sessions[1]!.receiveObject(0, 14));
    expect(error.code).toBe('INVALID_CONFIGURATION');
    expect(error.message).toMatch(/^receiveObject: the message with tag 14 is not a serialized value \(was it sent with sendObject\?\): /);
  });
});

describe('object size limits', () => {
  it('a collective value over a W-th of a frame (less its counts prefix) fails every rank, naming rank, size and limit', async () => {
    const sessions = jobs.get('tcp_peer 4')!.sessions;
    const limit = objectLimit(4);
    expect(limit).toBe(Math.floor((MAX_FRAME_PAYLOAD_BYTES - 32) / 4));
    // Serializing a quarter of a GiB takes seconds: the one large value of the suite.
    const errors = await Promise.all(sessions.map((session) => rejection(session.allGatherObject(session.rank === 2 ? new ArrayBuffer(limit) : null))));
    const bytes = (errors[0] as unknown as { bytes: number }).bytes;
    expect(bytes).toBeGreaterThan(limit);
    for (const error of errors) {
      expect(error).toMatchObject({ code: 'OBJECT_TOO_LARGE', rank: 2, bytes, limit });
      expect(error.message).toBe(`allGatherObject: rank 2's value serializes to ${bytes} bytes, over the limit of ${limit} bytes; send it as tensors, in pieces`);
    }
  }, 60_000);
});
