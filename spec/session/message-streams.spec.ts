/**
 * Point-to-point beyond send/receive (#49 item 5): probe and iprobe report a waiting message
 * without taking it; receive$ emits every matching message until unsubscribed and leaves later
 * ones for later receives; the send operator sends a stream in order, one send at a time.
 */
import { from, lastValueFrom, Subject, take, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { send } from '../../lib/session/operators/index.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { rejection, sleep, startJob, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});
async function job(worldSize: number, transport: CollectiveTransport): Promise<RankSession[]> {
  const started = await startJob(worldSize, { transport, timeoutMs: 10_000 });
  jobs.push(started);
  return started.sessions;
}

/** Whether `promise` is still pending after the event loop had a moment. */
async function pending(promise: Promise<unknown>): Promise<boolean> {
  const marker = Symbol('pending');
  return (await Promise.race([promise, sleep(50).then(() => marker)])) === marker;
}

describe('probe and iprobe (tcp_peer)', () => {
  it('report a waiting message (source, tag, dtype, count, bytes) without taking it, from one rank or any', async () => {
    const [zero, one, two] = await job(3, 'tcp_peer');
    expect(zero!.iprobe(null, 4)).toBeUndefined();
    const waitingForAny = zero!.probe(null, 4);
    const waitingForTwo = zero!.probe(2, 4);
    await one!.send(0, 4, Float32Array.of(1, 2, 3));
    const expected = { source: 1, tag: 4, dtype: 'f32', count: 3, bytes: 12 };
    await expect(waitingForAny).resolves.toEqual(expected);
    expect(zero!.iprobe(null, 4)).toEqual(expected);
    expect(zero!.iprobe(1, 4)).toEqual(expected);
    // A probe for another source or tag is not answered by it.
    expect(zero!.iprobe(2, 4)).toBeUndefined();
    expect(zero!.iprobe(1, 5)).toBeUndefined();
    expect(await pending(waitingForTwo)).toBe(true);
    await two!.send(0, 4, Int8Array.of(-1));
    await expect(waitingForTwo).resolves.toEqual({ source: 2, tag: 4, dtype: 'i8', count: 1, bytes: 1 });
    // Nothing was taken: the receives get both messages, and then nothing waits.
    expect(Array.from(await zero!.receive(1, 4, { dtype: 'f32', count: 3 }))).toEqual([1, 2, 3]);
    expect(zero!.iprobe(null, 4)).toMatchObject({ source: 2 });
    expect(Array.from(await zero!.receive(null, 4, { dtype: 'i8', count: 1 }))).toEqual([-1]);
    expect(zero!.iprobe(null, 4)).toBeUndefined();
  });

  it('a message a posted receive takes at once never waits, so a probe is not answered by it', async () => {
    const [zero, one] = await job(2, 'tcp_peer');
    const probe = zero!.probe(1, 6);
    const received = zero!.receive(1, 6, { dtype: 'u8', count: 1 });
    await one!.send(0, 6, Uint8Array.of(7));
    expect(Array.from(await received)).toEqual([7]);
    expect(await pending(probe)).toBe(true);
    await one!.sendObject(0, 6, { size: 'any' });
    const envelope = await probe;
    expect(envelope).toMatchObject({ source: 1, tag: 6, dtype: 'u8' });
    expect(envelope.count).toBe(envelope.bytes);
    await expect(zero!.receiveObject(1, 6)).resolves.toEqual({ size: 'any' });
  });

  it('probes a communicator in its own ranks and tags', async () => {
    const sessions = await job(3, 'tcp_peer');
    const groups = await Promise.all(sessions.slice(1).map((session) => session.group([2, 1])));
    const [ofOne, ofTwo] = groups as [RankSession, RankSession];
    // The world's message under the same tag is not the communicator's.
    await sessions[2]!.send(1, 3, Uint16Array.of(1));
    expect(ofOne.iprobe(null, 3)).toBeUndefined();
    await ofTwo.send(1, 3, Uint16Array.of(2, 3));
    await expect(ofOne.probe(null, 3)).resolves.toEqual({ source: 0, tag: 3, dtype: 'u16', count: 2, bytes: 4 });
    await sessions[1]!.receive(2, 3, { dtype: 'u16', count: 1 });
    expect(Array.from(await ofOne.receive(0, 3, { dtype: 'u16', count: 2 }))).toEqual([2, 3]);
  });

  it('is refused, named, with tcp_host_staged: the coordinator holds the waiting messages', async () => {
    const [zero] = await job(2, 'tcp_host_staged');
    const error = await rejection(zero!.probe(null, 1));
    expect(error.code).toBe('INVALID_CONFIGURATION');
    expect(error.message).toBe('probe needs direct peer links (tcp_peer): with tcp_host_staged the coordinator holds the messages that wait for a receive');
    expect(() => zero!.iprobe(1, 1)).toThrow(error.message);
  });
});

describe.each(['tcp_peer', 'tcp_host_staged'] as const)('receive$ on %s', (transport) => {
  it('emits every matching message from any rank, in order per sender, until unsubscribed', async () => {
    const [zero, one, two] = await job(3, transport);
    const received = lastValueFrom(zero!.receive$(null, 5, { dtype: 'i32', count: 1 }).pipe(take(6), toArray()));
    for (let step = 0; step < 3; step++) await Promise.all([one!.send(0, 5, Int32Array.of(10 + step)), two!.send(0, 5, Int32Array.of(20 + step))]);
    const values = (await received).map((tensor) => tensor[0]!);
    expect([...values].sort()).toEqual([10, 11, 12, 20, 21, 22]);
    expect(values.filter((value) => value < 20)).toEqual([10, 11, 12]);
    expect(values.filter((value) => value >= 20)).toEqual([20, 21, 22]);
  });

  it('leaves the message after the last one it took for a later receive', async () => {
    const [zero, one] = await job(2, transport);
    const taken = lastValueFrom(zero!.receive$(1, 8, { dtype: 'f64', count: 1 }).pipe(take(2), toArray()));
    for (const value of [1, 2, 3]) await one!.send(0, 8, Float64Array.of(value));
    expect((await taken).map((tensor) => tensor[0])).toEqual([1, 2]);
    expect(Array.from(await zero!.receive(1, 8, { dtype: 'f64', count: 1 }))).toEqual([3]);
  });

  it('errors (abort) as an error notification', async () => {
    const [zero, one] = await job(2, transport);
    const failed = rejection(lastValueFrom(zero!.receive$(1, 9, { dtype: 'u8', count: 1 })));
    await one!.abort('stream partner gave up');
    const error = await failed;
    expect(error.code).toBe('REMOTE_ABORT');
    expect(error.message).toContain('stream partner gave up');
  });
});

describe('receive$ unsubscribed while waiting (tcp_peer)', () => {
  it('withdraws its receive: a message that comes later stays for a later receive', async () => {
    const [zero, one] = await job(2, 'tcp_peer');
    const subscription = zero!.receive$(1, 2, { dtype: 'u32', count: 1 }).subscribe();
    await sleep(20);
    subscription.unsubscribe();
    await one!.send(0, 2, Uint32Array.of(42));
    // It arrives and waits: no receive was left posted to take it.
    await expect(zero!.probe(1, 2)).resolves.toMatchObject({ source: 1, count: 1 });
    expect(Array.from(await zero!.receive(1, 2, { dtype: 'u32', count: 1 }))).toEqual([42]);
  });
});

describe('send operator', () => {
  it('sends a stream in order, peer to peer, emitting each tensor once sent', async () => {
    const [zero, one, two] = await job(3, 'tcp_peer');
    // 0 -> 1 -> 2: rank 1 forwards what it receives, doubled, without a loop of awaits.
    const forwarded = lastValueFrom(
      one!.receive$(0, 1, { dtype: 'f32', count: 2 }).pipe(
        take(4),
        send(one!, 2, 1),
        toArray(),
      ),
    );
    const arrived = lastValueFrom(two!.receive$(1, 1, { dtype: 'f32', count: 2 }).pipe(take(4), toArray()));
    const sent = await lastValueFrom(from([0, 1, 2, 3].map((step) => Float32Array.of(step, -step))).pipe(send(zero!, 1, 1), toArray()));
    expect(sent.map((tensor) => tensor[0])).toEqual([0, 1, 2, 3]);
    expect((await forwarded).map((tensor) => tensor[0])).toEqual([0, 1, 2, 3]);
    expect((await arrived).map((tensor) => Array.from(tensor))).toEqual([0, 1, 2, 3].map((step) => [step, -step]));
  });

  it('has one send in flight at a time: the next starts once the transport took the one before', async () => {
    const calls: { tensor: Uint8Array; done: () => void }[] = [];
    const session = {
      send: (_destination: number, _tag: number, tensor: Uint8Array) => new Promise<void>((resolve) => calls.push({ tensor, done: resolve })),
    } as unknown as RankSession;
    const input = new Subject<Uint8Array>();
    const emitted: number[] = [];
    input.pipe(send(session, 1, 0)).subscribe((tensor) => emitted.push(tensor[0]!));
    for (const value of [1, 2, 3]) input.next(Uint8Array.of(value));
    expect(calls.map((call) => call.tensor[0])).toEqual([1]);
    calls[0]!.done();
    await sleep(0);
    expect(emitted).toEqual([1]);
    expect(calls.map((call) => call.tensor[0])).toEqual([1, 2]);
    calls[1]!.done();
    await sleep(0);
    calls[2]!.done();
    await sleep(0);
    expect(emitted).toEqual([1, 2, 3]);
  });
});
