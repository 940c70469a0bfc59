/**
 * Stray and hostile connections to a live coordinator: raw sockets that send garbage, HTTP, a
 * JOIN of another session or world, a truncated or oversized frame, a duplicate rank, or nothing
 * at all. Each is answered with an Abort frame naming the reason (decoded with `decodeFrames()`)
 * and dropped, or just dropped; the legitimate ranks' job still completes, and nothing crashes.
 */
import { asyncScheduler, filter, firstValueFrom, type SchedulerLike } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_JOIN_TIMEOUT_MS } from '../../lib/coordinator/coordinator.js';
import type { RxcclError } from '../../lib/errors.js';
import { ANY_RANK, HEADER_CHECKSUM_OFFSET, MAX_FRAME_PAYLOAD_BYTES } from '../../lib/protocol/constants.js';
import { crc32c } from '../../lib/protocol/crc32c.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { makeHeader } from '../../lib/protocol/frame.js';
import { FrameDecoder } from '../../lib/protocol/frame-decoder.js';
import { encodeHeader } from '../../lib/protocol/header.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { type JobOptions, rejection, sleep, startCoordinator, type TestJob } from '../helpers/job.js';
import { abortText, headerDeclaring, joinBytes, rawConnection, type RawConnection, type RawOutcome } from '../helpers/raw-socket.js';

const WORLD = 2;
const JOIN_TIMEOUT_MS = 300;

const jobs: TestJob[] = [];
const raws: RawConnection[] = [];
afterEach(async () => {
  for (const raw of raws.splice(0)) raw.socket.destroy();
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

async function coordinator(options: JobOptions = {}): Promise<TestJob> {
  const job = await startCoordinator(WORLD, { joinTimeoutMs: JOIN_TIMEOUT_MS, timeoutMs: 10_000, ...options });
  jobs.push(job);
  return job;
}

function raw(job: TestJob): RawConnection {
  const connection = rawConnection(job.coordinator.address.port);
  raws.push(connection);
  return connection;
}

/** Sends `bytes` (then optionally half-closes) and waits for the coordinator to drop the connection. */
async function stray(job: TestJob, bytes: Uint8Array | string, end = false): Promise<RawOutcome> {
  const connection = raw(job);
  await connection.connected;
  connection.socket.write(bytes);
  if (end) connection.socket.end();
  return connection.outcome;
}

/** The legitimate ranks join, run collectives, leave; the coordinator must end cleanly. */
async function healthyJob(job: TestJob, opened?: Promise<RankSession>[]): Promise<void> {
  const sessions = await Promise.all(opened ?? Array.from({ length: WORLD }, (_, rank) => job.openRank(rank)));
  await Promise.all(
    sessions.map(async (session) => {
      expect(Array.from(await session.allReduce(Int32Array.of(session.rank + 1)))).toEqual([3]);
      await session.barrier();
      await session.close();
    }),
  );
  await expect(job.coordinator.done).resolves.toBeUndefined();
}

/** The stray was told why (an Abort naming `reason`) and dropped; or, where allowed, just dropped. */
function expectRejected(outcome: RawOutcome, reason: RegExp, { dropOnly = false } = {}): void {
  expect(outcome.dropped, 'the coordinator dropped the connection').toBe(true);
  expect(outcome.decodeError, 'the coordinator sent only well-formed frames').toBeNull();
  const text = abortText(outcome.frames);
  if (dropOnly && text === null) return;
  expect(outcome.frames.map((frame) => frame.header.opcode)).toEqual([Opcode.Abort]);
  expect(text).toMatch(/^connection rejected: /);
  expect(text).toMatch(reason);
}

/** Rank 1 is a raw socket that joins properly on its collective channel and its rail. */
async function impostorJob(options: JobOptions = {}) {
  const job = await coordinator(options);
  const healthy = job.openRank(0);
  const impostor = raw(job);
  await impostor.connected;
  impostor.socket.write(joinBytes({ uniqueId: job.uniqueId, rank: 1, worldSize: WORLD }));
  const rail = raw(job);
  await rail.connected;
  rail.socket.write(joinBytes({ uniqueId: job.uniqueId, rank: 1, worldSize: WORLD, rail: 0 }));
  const session = await healthy;
  expect((await impostor.firstFrame)?.header.opcode).toBe(Opcode.Ready);
  expect((await rail.firstFrame)?.header.opcode).toBe(Opcode.Ready);
  /** An empty collective request of rank 1. */
  const request = (opcode: Opcode, sequence: bigint) =>
    encodeHeader(makeHeader({ uniqueId: job.uniqueId, opcode, sourceRank: 1, worldSize: WORLD, sequence }, 0));
  return { job, session, impostor, rail, request };
}

describe('stray connections before the ranks join', () => {
  it('garbage bytes', async () => {
    const job = await coordinator();
    const outcome = await stray(job, 'hello, coordinator!\n');
    expectRejected(outcome, /not a GX1 JOIN: header field magic/, { dropOnly: true });
    await healthyJob(job);
  });

  it('an HTTP request', async () => {
    const job = await coordinator();
    const outcome = await stray(job, 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expectRejected(outcome, /not a GX1 JOIN: header field magic/, { dropOnly: true });
    await healthyJob(job);
  });

  it('a JOIN with a wrong unique id is told so, without learning the real id', async () => {
    const job = await coordinator();
    const outcome = await stray(job, joinBytes({ uniqueId: UniqueId.random(), rank: 0, worldSize: WORLD }));
    expectRejected(outcome, /unique id mismatch/);
    const abort = outcome.frames[0]!.header;
    expect(abort.uniqueId.equals(job.uniqueId)).toBe(false);
    expect(Array.from(abort.uniqueId.bytes)).toEqual(new Array(16).fill(0));
    await healthyJob(job);
  });

  it('a JOIN with the wrong world size', async () => {
    const job = await coordinator();
    const outcome = await stray(job, joinBytes({ uniqueId: job.uniqueId, rank: 2, worldSize: 3 }));
    expectRejected(outcome, /rank declares world size 3, coordinator expects 2/);
    expect(outcome.frames[0]!.header.destinationRank).toBe(ANY_RANK);
    await healthyJob(job);
  });

  it('a JOIN for a rail the coordinator does not have', async () => {
    const job = await coordinator();
    const outcome = await stray(job, joinBytes({ uniqueId: job.uniqueId, rank: 1, worldSize: WORLD, rail: 5 }));
    expectRejected(outcome, /point-to-point rail 5, coordinator expects 0..=0/);
    expect(outcome.frames[0]!.header.destinationRank).toBe(1);
    await healthyJob(job);
  });

  it('a first frame that is not a JOIN', async () => {
    const job = await coordinator();
    const barrier = encodeHeader(makeHeader({ uniqueId: job.uniqueId, opcode: Opcode.Barrier, sourceRank: 0, worldSize: WORLD }, 0));
    const outcome = await stray(job, barrier);
    expectRejected(outcome, /first rank frame must be an empty JOIN/);
    await healthyJob(job);
  });

  it('a JOIN that carries a payload', async () => {
    const job = await coordinator();
    const header = makeHeader(
      { uniqueId: job.uniqueId, opcode: Opcode.Join, sourceRank: 0, worldSize: WORLD, elementType: ElementType.U8, elementCount: 4 },
      4,
    );
    const bytes = new Uint8Array(96 + 4);
    bytes.set(encodeHeader(header));
    const outcome = await stray(job, bytes);
    expectRejected(outcome, /first rank frame must be an empty JOIN/);
    await healthyJob(job);
  });

  it('a truncated frame, then close', async () => {
    const job = await coordinator();
    const join = joinBytes({ uniqueId: job.uniqueId, rank: 0, worldSize: WORLD });
    const outcome = await stray(job, join.subarray(0, 40), true);
    // The stray half-closed: an Abort may still reach it, or the coordinator just drops it.
    expectRejected(outcome, /stream ended inside a frame: 40 of 96 bytes/, { dropOnly: true });
    await healthyJob(job);
  });

  it('a header declaring a payload over MAX_FRAME_PAYLOAD_BYTES', async () => {
    const job = await coordinator();
    const join = joinBytes({ uniqueId: job.uniqueId, rank: 0, worldSize: WORLD });
    const oversized = headerDeclaring(join, BigInt(MAX_FRAME_PAYLOAD_BYTES) + 1n);
    const outcome = await stray(job, oversized);
    expectRejected(outcome, /payloadBytes/, { dropOnly: true });
    await healthyJob(job);
  });

  it('a header with a bad checksum', async () => {
    const job = await coordinator();
    const join = joinBytes({ uniqueId: job.uniqueId, rank: 0, worldSize: WORLD });
    join[40] = 7; // rootRank, outside the checksum's agreement
    const outcome = await stray(job, join);
    expectRejected(outcome, /checksum/, { dropOnly: true });
    await healthyJob(job);
  });

  it('a connection that says nothing is dropped after joinTimeoutMs', async () => {
    const job = await coordinator();
    const connection = raw(job);
    await connection.connected;
    const started = Date.now();
    const outcome = await connection.outcome;
    expectRejected(outcome, new RegExp(`no JOIN within ${JOIN_TIMEOUT_MS} ms`));
    expect(Date.now() - started).toBeGreaterThanOrEqual(JOIN_TIMEOUT_MS - 20);
    await healthyJob(job);
  });

  it('a connection that closes at once', async () => {
    const job = await coordinator();
    const connection = raw(job);
    await connection.connected;
    connection.socket.end();
    const outcome = await connection.outcome;
    expect(outcome.dropped).toBe(true);
    await healthyJob(job);
  });
});

describe('stray connections during and after the rendezvous', () => {
  it('strays arriving between the ranks do not disturb the rendezvous', async () => {
    const job = await coordinator();
    const first = job.openRank(0);
    const outcomes = await Promise.all([
      stray(job, 'garbage'),
      stray(job, joinBytes({ uniqueId: UniqueId.random(), rank: 1, worldSize: WORLD })),
      stray(job, joinBytes({ uniqueId: job.uniqueId, rank: 1, worldSize: 5 })),
    ]);
    expectRejected(outcomes[0]!, /magic/, { dropOnly: true });
    expectRejected(outcomes[1]!, /unique id mismatch/);
    expectRejected(outcomes[2]!, /world size 5/);
    await healthyJob(job, [first, job.openRank(1)]);
  });

  it('a duplicate rank JOIN, on the collective channel and on a rail, once the ranks are in', async () => {
    const job = await coordinator();
    const sessions = await Promise.all([job.openRank(0), job.openRank(1)]);
    const [collective, rail] = await Promise.all([
      stray(job, joinBytes({ uniqueId: job.uniqueId, rank: 0, worldSize: WORLD })),
      stray(job, joinBytes({ uniqueId: job.uniqueId, rank: 1, worldSize: WORLD, rail: 0 })),
    ]);
    expectRejected(collective, /rank 0 joined twice \(collective\)/);
    expectRejected(collective, new RegExp(`every rank of job ${job.uniqueId.toHex()} has joined and it is running; .*start a new job \\(a new Coordinator with a new UniqueId\\)`));
    expect(collective.frames[0]!.header.destinationRank).toBe(0);
    expect(collective.frames[0]!.header.uniqueId.equals(job.uniqueId)).toBe(true);
    expectRejected(rail, /rank 1 joined twice \(rail 0\)/);
    await healthyJob(job, sessions.map((session) => Promise.resolve(session)));
  });

  it('a duplicate rank JOIN during the rendezvous is refused without calling the job running', async () => {
    const job = await coordinator();
    const joined = firstValueFrom(job.coordinator.events$.pipe(filter((event) => event.type === 'rank-joined' && event.rank === 0 && event.channel === 'collective')));
    const first = job.openRank(0);
    await joined;
    const duplicate = await stray(job, joinBytes({ uniqueId: job.uniqueId, rank: 0, worldSize: WORLD }));
    expectRejected(duplicate, /^connection rejected: rank 0 joined twice \(collective\)$/);
    await healthyJob(job, [first, job.openRank(1)]);
  });

  it('a burst of 24 mixed strays while a job runs', async () => {
    const job = await coordinator();
    const sessions = await Promise.all([job.openRank(0), job.openRank(1)]);
    const payloads: (Uint8Array | string)[] = [
      'x',
      '\0\0\0\0\0\0\0\0',
      'GX1F',
      joinBytes({ uniqueId: UniqueId.random(), rank: 0, worldSize: WORLD }),
      joinBytes({ uniqueId: job.uniqueId, rank: 1, worldSize: WORLD }),
      headerDeclaring(joinBytes({ uniqueId: job.uniqueId, rank: 0, worldSize: WORLD }), 2n ** 40n),
    ];
    const strays = Array.from({ length: 24 }, (_, index) => stray(job, payloads[index % payloads.length]!));
    const work = Promise.all(
      sessions.map(async (session) => {
        for (let round = 0; round < 20; round++) expect(Array.from(await session.allReduce(Int32Array.of(round)))).toEqual([2 * round]);
      }),
    );
    const [outcomes] = await Promise.all([Promise.all(strays), work]);
    for (const outcome of outcomes) expect(outcome.dropped).toBe(true);
    await healthyJob(job, sessions.map((session) => Promise.resolve(session)));
  });

  it('a connection after the job ended is refused', async () => {
    const job = await coordinator();
    await healthyJob(job);
    const connection = raw(job);
    await expect(connection.connected).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('a joined rank that speaks garbage', () => {
  it('mid-collective: fails the job naming the rank and the sequence; the other rank is told', async () => {
    const { job, session, impostor } = await impostorJob();
    // A valid request for sequence 0 and garbage right behind it on the same connection: the
    // coordinator sees rank 1 submit, then fail, while sequence 0 is in flight.
    const request = makeHeader(
      { uniqueId: job.uniqueId, opcode: Opcode.AllReduce, elementType: ElementType.I32, reduceOp: 1, sourceRank: 1, worldSize: WORLD, elementCount: 1 },
      4,
    );
    const bytes = new Uint8Array(96 + 4 + 7);
    bytes.set(encodeHeader(request));
    bytes.set(new TextEncoder().encode('garbage'), 100);
    impostor.socket.write(bytes);
    const error = await rejection(session.allReduce(Int32Array.of(1)));
    expect(error.code).toBe('REMOTE_ABORT');
    expect(error.message).toMatch(/rank 1 failed during collective sequence 0: header field magic/);
    await expect(job.coordinator.done).rejects.toThrow(/rank 1 failed during collective sequence 0/);
    expect((await impostor.outcome).dropped).toBe(true);
  });

  it('between collectives: still fails the job (a failed connection is not a departure)', async () => {
    const { job, session, impostor, rail } = await impostorJob();
    impostor.socket.write('garbage between collectives');
    // The coordinator dropping the impostor proves it has read the garbage.
    expect((await impostor.outcome).dropped).toBe(true);
    rail.socket.end();
    const error = await rejection(session.allReduce(Int32Array.of(1)));
    expect(error.code).toBe('REMOTE_ABORT');
    expect(error.message).toMatch(/rank 1 failed before collective sequence 0: header field magic/);
    await session.close();
    await expect(job.coordinator.done).rejects.toThrow(/rank 1 failed before collective sequence 0/);
  });
});

// The coordinator's accept() answers a stream that is not GX1 with an Abort naming the reason.
describe('a stranger speaking garbage is told why before it is dropped', () => {
  for (const [what, bytes] of [
    ['garbage', 'hello, coordinator!\n'],
    ['HTTP', 'GET / HTTP/1.1\r\nHost: x\r\n\r\n'],
  ] as const) {
    it(what, async () => {
      const job = await coordinator();
      expectRejected(await stray(job, bytes), /not a GX1 JOIN: header field magic/);
      await healthyJob(job);
    });
  }
});

describe('raw ranks sending legal but extreme values', () => {
  it('a SET_TIMEOUT beyond what a Node timer holds does not make the next collective time out at once', async () => {
    const job = await coordinator();
    const ranks = await Promise.all(
      [0, 1].map(async (rank) => {
        const collective = raw(job);
        const rail = raw(job);
        await Promise.all([collective.connected, rail.connected]);
        collective.socket.write(joinBytes({ uniqueId: job.uniqueId, rank, worldSize: WORLD }));
        rail.socket.write(joinBytes({ uniqueId: job.uniqueId, rank, worldSize: WORLD, rail: 0 }));
        return { rank, collective, rail };
      }),
    );
    // Collect every frame each collective channel receives, in order.
    const received = ranks.map(({ collective }) => {
      const frames: number[] = [];
      const decoder = new FrameDecoder();
      let notify = () => undefined as void;
      collective.socket.on('data', (chunk: Buffer) => {
        decoder.push(new Uint8Array(chunk), (frame) => frames.push(frame.header.opcode));
        notify();
      });
      return {
        frames,
        until: (count: number) =>
          new Promise<void>((resolve) => {
            const check = () => {
              if (frames.length >= count) resolve();
            };
            notify = check;
            check();
          }),
      };
    });
    await Promise.all(received.map((r) => r.until(1))); // READY
    const request = (rank: number, opcode: Opcode, sequence: bigint, tag = 0n) =>
      encodeHeader(makeHeader({ uniqueId: job.uniqueId, opcode, sourceRank: rank, worldSize: WORLD, sequence, tag }, 0));
    // 2^40 ms: a legal u64 tag, far beyond 2^31 - 1 ms.
    for (const { rank, collective } of ranks) collective.socket.write(request(rank, Opcode.SetTimeout, 0n, 2n ** 40n));
    await Promise.all(received.map((r) => r.until(2)));
    ranks[0]!.collective.socket.write(request(0, Opcode.Barrier, 1n));
    await sleep(80);
    ranks[1]!.collective.socket.write(request(1, Opcode.Barrier, 1n));
    await Promise.all(received.map((r) => r.until(3)));
    for (const r of received) expect(r.frames).toEqual([Opcode.Ready, Opcode.SetTimeout, Opcode.Barrier]);
    for (const { collective, rail } of ranks) {
      collective.socket.end();
      rail.socket.end();
    }
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });
});

describe('collective sequence (docs 9.2)', () => {
  it('a request with another sequence than the one being filled fails the session, naming rank, expected and actual', async () => {
    const { job, session, impostor, request } = await impostorJob();
    const pending = rejection(session.barrier());
    impostor.socket.write(request(Opcode.Barrier, 3n));
    const text = 'rank 1 submitted collective sequence 3, expected 0';
    const error = await pending;
    expect(error.code).toBe('REMOTE_ABORT');
    expect(error.message).toBe(`collective coordinator aborted: ${text}`);
    const failure = await rejection(job.coordinator.done);
    expect(failure.code).toBe('PROTOCOL');
    expect(failure.message).toBe(text);
    expect(abortText((await impostor.outcome).frames)).toBe(text);
  });

  it('is checked on arrival, before the other ranks submit', async () => {
    const { job, session, impostor, request } = await impostorJob();
    impostor.socket.write(request(Opcode.Barrier, 0n));
    await session.barrier();
    // Sequence 1 is open; rank 1 repeats sequence 0 while rank 0 has not submitted yet.
    impostor.socket.write(request(Opcode.Barrier, 0n));
    const failure = await rejection(job.coordinator.done);
    expect(failure.message).toBe('rank 1 submitted collective sequence 0, expected 1');
    expect((await rejection(session.barrier())).code).toBe('REMOTE_ABORT');
  });
});

describe('a rail that breaks (docs section 11)', () => {
  const garbage = 'header field magic starts 0x67, expected "GX1F" (47 58 31 46): not a GX1 stream';

  it('without a heartbeat lease: the rank gets an Abort naming the error and the rail is closed; the session goes on', async () => {
    const { job, session, impostor, rail, request } = await impostorJob();
    rail.socket.write('garbage');
    const outcome = await rail.outcome;
    expect(outcome.dropped).toBe(true);
    expect(outcome.frames.map((frame) => frame.header.opcode)).toEqual([Opcode.Ready, Opcode.Abort]);
    expect(abortText(outcome.frames)).toBe(`point-to-point rank 1 rail 0 failed: ${garbage}`);
    expect(outcome.frames[1]!.header.destinationRank).toBe(1);
    // The rail only counts as closed by rank 1: collectives still run, and the job ends cleanly.
    impostor.socket.write(request(Opcode.Barrier, 0n));
    await session.barrier();
    impostor.socket.end();
    await session.close();
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('with a heartbeat lease: the session fails, and the broken rail is told too', async () => {
    const { job, session, rail } = await impostorJob({ heartbeatTimeoutMs: 5_000 });
    rail.socket.write('garbage');
    const text = `point-to-point rank 1 failed without LEAVE: ${garbage}`;
    await expect(job.coordinator.done).rejects.toThrow(text);
    expect(abortText((await rail.outcome).frames)).toBe(text);
    expect((await rejection(session.barrier())).message).toContain(text);
  });
});

describe('JOIN refusals keep the category of their cause (docs 8.1)', () => {
  /** The JOIN with one byte changed and its checksum recomputed, so only that byte is wrong. */
  const edited = (join: Uint8Array, offset: number, value: number) => {
    const bytes = Uint8Array.from(join);
    bytes[offset] = value;
    new DataView(bytes.buffer).setUint32(HEADER_CHECKSUM_OFFSET, crc32c(bytes, 0, HEADER_CHECKSUM_OFFSET), true);
    return bytes;
  };

  it('PROTOCOL for a stream that is not GX1 (checksum, version, magic), the session rule\'s code otherwise', async () => {
    const job = await coordinator();
    const refused: RxcclError[] = [];
    job.coordinator.rejections$.subscribe((error) => refused.push(error));
    const join = joinBytes({ uniqueId: job.uniqueId, rank: 0, worldSize: WORLD });
    const badChecksum = Uint8Array.from(join);
    badChecksum[40] = 7;
    const cases: [Uint8Array | string | null, string, RegExp][] = [
      [badChecksum, 'PROTOCOL', /^not a GX1 JOIN: header field checksum is 0x[0-9a-f]{8}, expected 0x[0-9a-f]{8} \(CRC-32C of bytes 0\.\.91\)$/],
      [edited(join, 4, 2), 'PROTOCOL', /^not a GX1 JOIN: unsupported GX1 protocol version 2; this implementation speaks version 1$/],
      ['GET ', 'PROTOCOL', /^not a GX1 JOIN: header field magic starts 0x4745, /],
      [joinBytes({ uniqueId: UniqueId.random(), rank: 0, worldSize: WORLD }), 'WRONG_SESSION', /^JOIN belongs to another session \(unique id mismatch\)$/],
      [joinBytes({ uniqueId: job.uniqueId, rank: 0, worldSize: 3 }), 'INVALID_CONFIGURATION', /^rank declares world size 3, coordinator expects 2$/],
      [null, 'TIMEOUT', new RegExp(`^no JOIN within ${JOIN_TIMEOUT_MS} ms$`)],
    ];
    for (const [bytes, code, message] of cases) {
      const connection = raw(job);
      await connection.connected;
      if (bytes !== null) connection.socket.write(bytes);
      const outcome = await connection.outcome;
      const error = refused.shift()!;
      expect({ code: error.code, message: error.message }).toEqual({ code, message: expect.stringMatching(message) });
      expect(abortText(outcome.frames)).toBe(`connection rejected: ${error.message}`);
    }
    await healthyJob(job);
  });

  it(`the JOIN timeout is ${DEFAULT_JOIN_TIMEOUT_MS} ms by default`, async () => {
    // The real clock, recording each delay the coordinator asks for.
    const delays: number[] = [];
    const scheduler = Object.create(asyncScheduler) as SchedulerLike;
    scheduler.schedule = (...args: Parameters<SchedulerLike['schedule']>) => {
      delays.push(args[1] ?? 0);
      return asyncScheduler.schedule(...(args as [never, number?, unknown?]));
    };
    // The report of ranks not joined yet is the coordinator's one other delay.
    const job = await startCoordinator(WORLD, { scheduler, joinReportIntervalMs: 12_345 });
    jobs.push(job);
    await raw(job).connected;
    for (let waited = 0; delays.length < 2 && waited < 2_000; waited += 10) await sleep(10);
    expect(DEFAULT_JOIN_TIMEOUT_MS).toBe(10_000);
    // The handshake's deadline runs from the connection's arrival: a loaded machine may have let a
    // millisecond or two pass before the timer is asked for.
    expect(delays[0]).toBe(12_345);
    expect(delays[1]).toBeGreaterThan(DEFAULT_JOIN_TIMEOUT_MS - 50);
    expect(delays[1]).toBeLessThanOrEqual(DEFAULT_JOIN_TIMEOUT_MS);
    expect(delays).toHaveLength(2);
  });
});
