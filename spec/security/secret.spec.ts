/**
 * The job's secret end to end (docs/protocol.md 8.4): jobs with a secret run on both transports;
 * a rank without it, with another one, or a coordinator without it are refused with what is
 * missing; a fake coordinator that cannot prove the secret never hears the unique id; a dialer
 * cannot authenticate as one rank and join as another; and where the secret comes from.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { RxcclError } from '../../lib/errors.js';
import { authAcceptFrame, authChallengeFrame, newNonce } from '../../lib/protocol/auth.js';
import { ANY_RANK } from '../../lib/protocol/constants.js';
import { joinHeader } from '../../lib/protocol/control-frames.js';
import { frameText } from '../../lib/protocol/frame.js';
import { encodeHeader } from '../../lib/protocol/header.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { connectChannel } from '../../lib/transport/connect-channel.js';
import { FrameChannel } from '../../lib/transport/frame-channel.js';
import { dialHandshake } from '../../lib/transport/handshake.js';
import { generateSecret, resolveSecret } from '../../lib/transport/job-secret.js';
import { rejection, startCoordinator, type TestJob } from '../helpers/job.js';
import { readSettings } from '../../lib/settings/read-settings.js';
import { secretVariables } from '../../lib/settings/setting-parts.js';

/** The secret variables of `env`, as the settings read them. */
const secretOf = (env: Record<string, string>) => secretVariables(readSettings(env));

const jobs: TestJob[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

async function coordinatorJob(options: Parameters<typeof startCoordinator>[1] = {}): Promise<TestJob> {
  const job = await startCoordinator(2, { joinTimeoutMs: 1_000, timeoutMs: 10_000, ...options });
  jobs.push(job);
  return job;
}

const bytes = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));

describe("a job's secret", () => {
  for (const transport of ['tcp_host_staged', 'tcp_peer'] as const) {
    it(`${transport}: ranks with the secret run collectives and point-to-point over authenticated channels`, async () => {
      const secret = generateSecret();
      const job = await coordinatorJob({ secret, transport, rails: 2 });
      const [zero, one] = await Promise.all([job.openRank(0, { secret }), job.openRank(1, { secret })]);
      const sums = await Promise.all([zero!, one!].map((session) => session.allReduce(Float32Array.of(session.rank + 0.5))));
      expect(sums.map((sum) => Array.from(sum))).toEqual([[2], [2]]);
      const [, received] = await Promise.all([zero!.send(1, 3, Int32Array.of(9), { rail: 1 }), one!.receive(0, 3, { dtype: 'i32', count: 1 }, { rail: 1 })]);
      expect(Array.from(received as Int32Array)).toEqual([9]);
    });
  }

  it('refuses a rank without the secret, or with another, naming what is missing; the real ranks still join', async () => {
    const secret = generateSecret();
    const job = await coordinatorJob({ secret });
    const refusals: RxcclError[] = [];
    job.coordinator.rejections$.subscribe((error) => refusals.push(error));
    const address = { host: '127.0.0.1', port: job.coordinator.address.port };
    const join = { uniqueId: job.uniqueId, rank: 1, worldSize: 2, rail: null, timeoutMs: 5_000 };

    const missing = await rejection(connectChannel(address, join));
    expect(missing.code).toBe('AUTHENTICATION');
    expect(missing.message).toBe(
      `coordinator 127.0.0.1:${address.port} requires the job's secret: set GX1_SECRET or GX1_SECRET_FILE (or the secret option), as the job's launcher printed it`,
    );
    const wrong = await rejection(connectChannel(address, { ...join, secret: bytes(generateSecret()) }));
    // One kind per cause (docs/errors.md): a wrong secret is AUTHENTICATION, as a missing one is.
    expect(wrong.code).toBe('AUTHENTICATION');
    expect(wrong.message).toBe(
      `coordinator 127.0.0.1:${address.port} refused rank 1: connection rejected: authentication failed: the dialer of rank 1 to coordinator collective channel does not know the job's secret`,
    );
    expect(refusals.map((error) => error.code)).toContain('AUTHENTICATION');

    const sessions = await Promise.all([job.openRank(0, { secret }), job.openRank(1, { secret })]);
    await Promise.all(sessions.map((session) => session.barrier()));
  });

  it('a rank with a secret refuses a coordinator that has none', async () => {
    const job = await coordinatorJob({ joinTimeoutMs: 300 });
    const error = await rejection(job.openRank(0, { secret: generateSecret(), timeoutMs: 5_000 }));
    expect(error.code).toBe('AUTHENTICATION');
    expect(error.message).toMatch(/refused rank 0 without a challenge \(connection rejected: .*\): does it have the job's secret\?$/);
  });

  it('a fake coordinator that cannot prove the secret never hears the unique id', async () => {
    const heard: Buffer[] = [];
    const sockets: Socket[] = [];
    const fake = createServer((socket) => {
      sockets.push(socket);
      socket.on('data', (chunk: Buffer) => {
        heard.push(chunk);
        // Whatever the rank answered, claim to know the secret.
        socket.write(Buffer.concat([Buffer.from(encodeHeader(authAcceptFrame(newNonce()).header)), Buffer.from(authAcceptFrame(newNonce()).payload)]));
      });
      const challenge = authChallengeFrame(newNonce());
      socket.write(Buffer.concat([Buffer.from(encodeHeader(challenge.header)), Buffer.from(challenge.payload)]));
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => fake.close(resolve));
    });
    const uniqueId = UniqueId.random();
    const port = (fake.address() as { port: number }).port;
    const error = await rejection(connectChannel({ host: '127.0.0.1', port }, { uniqueId, rank: 0, worldSize: 2, rail: null, timeoutMs: 5_000, secret: bytes(generateSecret()) }));
    expect(error.message).toBe(`coordinator 127.0.0.1:${port} could not prove it knows the job's secret`);
    expect(Buffer.concat(heard).includes(Buffer.from(uniqueId.bytes))).toBe(false);
  });

  it('a dialer that authenticated as one rank cannot join as another', async () => {
    const secret = generateSecret();
    const job = await coordinatorJob({ secret });
    const socket = await new Promise<Socket>((resolve) => {
      const dialled: Socket = connect(job.coordinator.address.port, '127.0.0.1', () => resolve(dialled));
    });
    const channel = new FrameChannel(socket);
    cleanups.push(() => channel.destroy());
    await dialHandshake(channel, { secret: bytes(secret), claim: { rank: 1, worldSize: 2, peer: ANY_RANK, rail: null }, timeoutMs: 5_000, acceptor: 'coordinator' });
    channel.send({ header: joinHeader({ uniqueId: job.uniqueId, rank: 0, worldSize: 2 }, null), parts: [] });
    const refusal = await firstValueFrom(channel.frames$);
    expect(frameText(refusal)).toBe(
      'connection rejected: connection authenticated as rank 1 to coordinator collective channel but opened as rank 0 to coordinator collective channel',
    );
  });
});

describe('where the secret comes from', () => {
  const directory = mkdtempSync(join(tmpdir(), 'rxccl-secret-'));
  const file = join(directory, 'secret');
  writeFileSync(file, 'from-the-file-0123456789\n');

  it('the option, else GX1_SECRET, else GX1_SECRET_FILE (one final line break dropped), else none', () => {
    const text = (secret: Uint8Array | null) => (secret === null ? null : Buffer.from(secret).toString('utf8'));
    expect(text(resolveSecret('from-the-option-0123', secretOf({ GX1_SECRET: 'from-the-variable-0123' })))).toBe('from-the-option-0123');
    expect(text(resolveSecret(undefined, secretOf({ GX1_SECRET: 'from-the-variable-0123', GX1_SECRET_FILE: file })))).toBe('from-the-variable-0123');
    expect(text(resolveSecret(undefined, secretOf({ GX1_SECRET_FILE: file })))).toBe('from-the-file-0123456789');
    expect(resolveSecret(undefined, secretOf({}))).toBeNull();
  });

  it('refuses a short secret and names an unreadable file', () => {
    expect(() => resolveSecret(undefined, secretOf({ GX1_SECRET: 'short' }))).toThrow(
      'GX1_SECRET holds 5 bytes; a job secret needs at least 16 (rxccl launch and rxccl coordinator generate one)',
    );
    expect(() => resolveSecret(undefined, secretOf({ GX1_SECRET_FILE: join(directory, 'missing') }))).toThrow(/^cannot read GX1_SECRET_FILE ".*missing": ENOENT/);
  });
});
