/**
 * tcp_peer flow control: the mesh reads every link all the time, so a receive posted for a later
 * message never waits behind unmatched data, and a peer that parks more unmatched bytes than the
 * budget (`unmatchedBytesLimit` / `GX1_P2P_UNMATCHED_BYTES`) fails every rank, named, at once.
 */
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_UNMATCHED_BYTES_LIMIT } from '../../lib/transport/peer-mesh.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { rejection, startCoordinator, type JobOptions, type TestJob } from '../helpers/job.js';

const MIB = 1024 * 1024;
/** The seed's sizes: a large message nobody receives yet, then a small one that is received first. */
const LARGE_BYTES = 70 * MIB;
const SMALL_BYTES = 4;

/** Jobs this file started; each test's are disposed after it. */
const jobs: TestJob[] = [];
afterEach(() => Promise.all(jobs.splice(0).map((job) => job.dispose())));
const peerJob = (worldSize: number, options: JobOptions) =>
  startCoordinator(worldSize, { transport: 'tcp_peer', ...options }).then((job) => (jobs.push(job), job));

function patterned(bytes: number, seed: number): Uint8Array {
  const data = new Uint8Array(bytes);
  for (let index = 0; index < bytes; index++) data[index] = (index * 31 + seed) & 0xff;
  return data;
}

/** Resolves with the error a session fails with (at once if it already failed). */
const sessionFailure = (session: RankSession) => rejection(firstValueFrom(session.failure$));

describe('tcp_peer: unmatched data does not block later messages', () => {
  it('rank 1 sends 70 MiB with tag 1 then 4 B with tag 2; rank 0 receives tag 2 first, then tag 1', async () => {
    const job = await peerJob(2, { timeoutMs: 20_000 });
    const [zero, one] = (await Promise.all([0, 1].map((rank) => job.openRank(rank)))) as [RankSession, RankSession];
    const large = patterned(LARGE_BYTES, 1);
    const small = patterned(SMALL_BYTES, 2);
    const [, received] = await Promise.all([
      (async () => {
        await one.send(0, 1, large);
        await one.send(0, 2, small);
      })(),
      (async () => {
        // Tag 2 is behind 70 MiB of tag 1 on the same link: it must not wait for a receive of tag 1.
        const second = (await zero.receive(1, 2, { dtype: 'u8', count: SMALL_BYTES })) as Uint8Array;
        const first = (await zero.receive(1, 1, { dtype: 'u8', count: LARGE_BYTES })) as Uint8Array;
        return { first, second };
      })(),
    ]);
    expect(Array.from(received.second)).toEqual(Array.from(small));
    expect(received.first.length).toBe(LARGE_BYTES);
    expect(Buffer.compare(received.first, large)).toBe(0);
    await Promise.all([zero.close(), one.close()]);
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('a peer over the unmatched budget fails every rank at once, naming the sender, its tags and the limit', async () => {
    const job = await peerJob(3, { timeoutMs: 20_000 });
    const limit = MIB;
    const sessions = await Promise.all([0, 1, 2].map((rank) => job.openRank(rank, { unmatchedBytesLimit: limit })));
    const [zero, one, two] = sessions as [RankSession, RankSession, RankSession];
    const failures = sessions.map(sessionFailure);
    const started = Date.now();
    // Nobody posts a receive: rank 0 holds the 70 MiB until it is over its budget.
    const sends = Promise.allSettled([one.send(0, 1, patterned(LARGE_BYTES, 3)).then(() => one.send(0, 2, patterned(SMALL_BYTES, 4)))]);
    const expected = `rank 1 parked ${LARGE_BYTES} unmatched bytes at rank 0 on rail 0 (tags 1), over the limit of ${limit} bytes`;
    const [atZero, atOne, atTwo] = await Promise.all(failures);
    expect(atZero!.code).toBe('INVALID_CONFIGURATION');
    expect(atZero!.message).toContain(expected);
    expect(atZero!.message).toContain('GX1_P2P_UNMATCHED_BYTES');
    for (const error of [atOne!, atTwo!]) {
      expect(error.code).toBe('REMOTE_ABORT');
      expect(error.message).toContain(expected);
    }
    // Told, not timed out: far below the 20 s session timeout.
    expect(Date.now() - started).toBeLessThan(10_000);
    await sends;
    // Every later call on every rank is refused with its failure.
    await expect(zero.receive(1, 2, { dtype: 'u8', count: SMALL_BYTES })).rejects.toThrow(expected);
    await expect(two.barrier()).rejects.toThrow(expected);
    await expect(job.coordinator.done).rejects.toThrow(`rank 0 aborted: ${expected}`);
  });
});

describe('unmatched bytes budget: option and GX1_P2P_UNMATCHED_BYTES', () => {
  const base = { coordinator: '127.0.0.1:1', uniqueId: '00'.repeat(16), rank: 0, worldSize: 2 };

  it('defaults to 1 GiB; the variable applies where the option is silent; the option wins', () => {
    expect(resolveSessionOptions(base, {}).unmatchedBytesLimit).toBe(DEFAULT_UNMATCHED_BYTES_LIMIT);
    expect(DEFAULT_UNMATCHED_BYTES_LIMIT).toBe(2 ** 30);
    expect(resolveSessionOptions(base, { GX1_P2P_UNMATCHED_BYTES: ' 4096 ' }).unmatchedBytesLimit).toBe(4096);
    expect(resolveSessionOptions({ ...base, unmatchedBytesLimit: 512 }, { GX1_P2P_UNMATCHED_BYTES: '4096' }).unmatchedBytesLimit).toBe(512);
    // The option wins even over a variable that would be refused.
    expect(resolveSessionOptions({ ...base, unmatchedBytesLimit: 512 }, { GX1_P2P_UNMATCHED_BYTES: 'lots' }).unmatchedBytesLimit).toBe(512);
  });

  it.each(['0', '-1', '1.5', 'lots', '', '1e6', '99999999999999999999'])('refuses GX1_P2P_UNMATCHED_BYTES=%j, naming the variable', (value) => {
    expect(() => resolveSessionOptions(base, { GX1_P2P_UNMATCHED_BYTES: value })).toThrow(
      expect.objectContaining({
        code: 'INVALID_CONFIGURATION',
        message: `GX1_P2P_UNMATCHED_BYTES must be a positive integer number of bytes, got ${JSON.stringify(value)}`,
      }),
    );
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('refuses unmatchedBytesLimit %s, naming the option', (value) => {
    expect(() => resolveSessionOptions({ ...base, unmatchedBytesLimit: value }, {})).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIGURATION', message: `unmatchedBytesLimit must be a positive integer number of bytes, got ${value}` }),
    );
  });
});
