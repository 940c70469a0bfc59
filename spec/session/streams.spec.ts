/** The reactive forms: collective operators, connect(), messages(), heartbeat$, failure$. */
import { firstValueFrom, from, lastValueFrom, Subject, take, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { allGather, allReduce, broadcast, heartbeat$ } from '../../lib/session/operators/index.js';
import { connect } from '../../lib/launch/open-session.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { DEFAULT_TRANSPORT } from '../../lib/transport/transport-kind.js';
import { rejection, startCoordinator, startJob, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});
async function job2(): Promise<TestJob & { sessions: RankSession[] }> {
  const job = await startJob(2);
  jobs.push(job);
  return job;
}

describe('collective operators', () => {
  it('submit one collective per value, in order, and deliver the results in order', async () => {
    const { sessions } = await job2();
    const results = await Promise.all(
      sessions.map((session) =>
        lastValueFrom(from([1, 2, 3].map((value) => Float32Array.of(value * (session.rank + 1)))).pipe(allReduce(session, 'sum'), toArray())),
      ),
    );
    for (const perRank of results) expect(perRank.map((tensor) => Array.from(tensor))).toEqual([[3], [6], [9]]);
  });

  it('submit exactly once however many subscribers the result has', async () => {
    const { sessions } = await job2();
    const runs = sessions.map((session) => {
      const input = new Subject<Int32Array>();
      const gathered = input.pipe(allGather(session));
      const first = firstValueFrom(gathered);
      const second = firstValueFrom(gathered);
      input.next(Int32Array.of(session.rank));
      return Promise.all([first, second]);
    });
    const [[a, b], [c, d]] = await Promise.all(runs);
    for (const result of [a, b, c, d]) expect(Array.from(result!)).toEqual([0, 1]);
    // Had the second subscriber submitted again, the two ranks would now disagree on the sequence.
    const after = await Promise.all(sessions.map((session) => session.allGather(Int32Array.of(7))));
    for (const result of after) expect(Array.from(result)).toEqual([7, 7]);
  });

  it('error with the session failure when a collective fails', async () => {
    const { sessions } = await job2();
    const [zero, one] = sessions as [RankSession, RankSession];
    const pending = rejection(lastValueFrom(from([Float64Array.of(1)]).pipe(broadcast(zero, 0))));
    await one.abort('operator abort');
    const error = await pending;
    expect(error.code).toBe('REMOTE_ABORT');
    expect(error.message).toContain('operator abort');
  });
});

describe('session streams', () => {
  it('connect() emits the joined session and closes it (LEAVE) on unsubscribe', async () => {
    // connect() without a transport: the library's default, which the coordinator must share.
    const job = await startCoordinator(2, { transport: DEFAULT_TRANSPORT });
    jobs.push(job);
    const options = (rank: number) => ({ coordinator: `127.0.0.1:${job.coordinator.address.port}`, uniqueId: job.uniqueId, rank, worldSize: 2 });
    const sessions = await Promise.all([0, 1].map((rank) => firstValueFrom(connect(options(rank)))));
    // firstValueFrom unsubscribed right after the first value: both sessions were closed cleanly.
    await expect(job.coordinator.done).resolves.toBeUndefined();
    await expect(sessions[0]!.barrier()).rejects.toMatchObject({ code: 'CHANNEL_CLOSED' });
  });

  it('failure$ errors with the failure on every rank, and completes on a clean close', async () => {
    const { sessions } = await job2();
    const [zero, one] = sessions as [RankSession, RankSession];
    const failed = rejection(lastValueFrom(zero.failure$, { defaultValue: undefined }));
    await one.abort('watch this');
    expect((await failed).message).toContain('watch this');
    const job = await job2();
    const closed = lastValueFrom(job.sessions[0]!.failure$, { defaultValue: 'completed' });
    await job.sessions[0]!.close();
    await expect(closed).resolves.toBe('completed');
  });

  it('messages() posts one receive per pull and none after the loop ends', async () => {
    const { sessions, coordinator } = await job2();
    const [zero, one] = sessions as [RankSession, RankSession];
    for (let value = 0; value < 3; value++) await zero.send(1, 5, Uint16Array.of(value));
    const received: number[] = [];
    for await (const message of one.messages(0, 5, { dtype: 'u16', count: 1 })) {
      received.push((message as Uint16Array)[0]!);
      if (received.length === 2) break;
    }
    expect(received).toEqual([0, 1]);
    // The third message is still waiting for a receive: nothing consumed it behind our back.
    expect(Array.from((await one.receive(0, 5, { dtype: 'u16', count: 1 })) as Uint16Array)).toEqual([2]);
    await Promise.all(sessions.map((session) => session.close()));
    await expect(coordinator.done).resolves.toBeUndefined();
  });

  it('heartbeat$ emits round trips every period', async () => {
    const { sessions } = await job2();
    const beats = await lastValueFrom(heartbeat$(sessions[0]!, 10, 1_000).pipe(take(3), toArray()));
    expect(beats).toHaveLength(3);
    for (const beat of beats) expect(beat).toBeGreaterThanOrEqual(0);
  });
});
