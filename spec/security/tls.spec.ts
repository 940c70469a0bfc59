/**
 * Optional TLS for every channel (coordinator channels and mesh links), mutual with a CA: a job
 * with the CA's certificate (and its secret) runs on both transports; a rank without TLS, or with
 * a certificate the CA did not sign, is refused; the settings come from GX1_TLS_* too.
 * The certificates are test-only fixtures (spec/security/fixtures/tls/README.md).
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { generateSecret } from '../../lib/transport/job-secret.js';
import { resolveTls, type TlsOptions } from '../../lib/transport/tls-settings.js';
import { rejection, startCoordinator, type TestJob } from '../helpers/job.js';
import { readSettings } from '../../lib/settings/read-settings.js';
import { tlsVariables } from '../../lib/settings/setting-parts.js';

/** The TLS variables of `env`, as the settings read them. */
const tlsOf = (env: Record<string, string>) => tlsVariables(readSettings(env));

const fixture = (name: string) => new URL(`fixtures/tls/${name}`, import.meta.url);
const pem = (name: string) => readFileSync(fixture(name));
const JOB: TlsOptions = { cert: pem('job.pem'), key: pem('job.key'), ca: pem('ca.pem') };
const ROGUE: TlsOptions = { cert: pem('rogue.pem'), key: pem('rogue.key'), ca: pem('ca.pem') };

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

describe('TLS on every channel', () => {
  for (const transport of ['tcp_host_staged', 'tcp_peer'] as const) {
    it(`${transport}: ranks with the CA's certificate run collectives and point-to-point over TLS`, async () => {
      const secret = generateSecret();
      const job = await startCoordinator(2, { transport, secret, tls: JOB, timeoutMs: 10_000 });
      jobs.push(job);
      const sessions = await Promise.all([0, 1].map((rank) => job.openRank(rank, { secret, tls: JOB })));
      const sums = await Promise.all(sessions.map((session) => session.allReduce(Float64Array.of(session.rank + 1))));
      expect(sums.map((sum) => Array.from(sum))).toEqual([[3], [3]]);
      const big = new Uint8Array(3 * 2 ** 20).fill(5);
      const [, received] = await Promise.all([sessions[0]!.send(1, 1, big), sessions[1]!.receive(0, 1, { dtype: 'u8', count: big.length })]);
      expect((received as Uint8Array).every((byte) => byte === 5)).toBe(true);
    });
  }

  it('refuses a rank without TLS and one whose certificate the CA did not sign; the job still runs', async () => {
    const job = await startCoordinator(2, { tls: JOB, joinTimeoutMs: 1_000, timeoutMs: 3_000 });
    jobs.push(job);
    const plain = await rejection(job.openRank(1, { timeoutMs: 2_000 }));
    expect(plain.code).toMatch(/CHANNEL_CLOSED|INVALID_CONFIGURATION|TIMEOUT|PROTOCOL/);
    const rogue = await rejection(job.openRank(1, { tls: ROGUE, timeoutMs: 2_000 }));
    // Under TLS 1.3 the coordinator checks the client's certificate after the client's side of the
    // handshake completed: the rank sees the connection closed (or the alert), never a READY.
    expect(rogue.message).toMatch(/coordinator closed before READY|certificate|alert/i);
    // A plain TCP stranger learns nothing in GX1: it meets a TLS server.
    const stranger = connect(job.coordinator.address.port, '127.0.0.1');
    const heard = await new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      stranger.on('data', (chunk: Buffer) => chunks.push(chunk)).on('close', () => resolve(Buffer.concat(chunks))).on('error', () => undefined);
      stranger.write('GX1F');
      setTimeout(() => stranger.destroy(), 1_500);
    });
    expect(heard.includes(Buffer.from('GX1F'))).toBe(false);
    const sessions = await Promise.all([0, 1].map((rank) => job.openRank(rank, { tls: JOB })));
    await Promise.all(sessions.map((session) => session.barrier()));
  });

  it('a rank without TLS dialling a TLS coordinator is told so at once, with a secret or without, not after its timeout', async () => {
    const secret = generateSecret();
    for (const withSecret of [false, true]) {
      // The listener's TLS handshake timeout is its JOIN timeout: a rank with a secret waits that long for a challenge.
      const job = await startCoordinator(2, { tls: JOB, joinTimeoutMs: 1_000, ...(withSecret ? { secret } : {}) });
      jobs.push(job);
      const started = performance.now();
      const plain = await rejection(job.openRank(1, { timeoutMs: 120_000, ...(withSecret ? { secret } : {}) }));
      expect(performance.now() - started, `with a secret: ${withSecret}`).toBeLessThan(30_000);
      expect([plain.code, plain.message]).toEqual([
        'INVALID_CONFIGURATION',
        `the coordinator at 127.0.0.1:${job.coordinator.address.port} speaks TLS and rank 1 does not: give every rank the job's TLS settings (GX1_TLS_CERT and GX1_TLS_KEY, and GX1_TLS_CA where the job has one, or the tls option), as the coordinator has them`,
      ]);
    }
  });

  it('a rank with TLS dialling a plain coordinator is told so at once', async () => {
    const job = await startCoordinator(2, {});
    jobs.push(job);
    const started = performance.now();
    const tls = await rejection(job.openRank(1, { tls: JOB, timeoutMs: 120_000 }));
    expect(performance.now() - started).toBeLessThan(30_000);
    expect([tls.code, tls.message]).toEqual([
      'INVALID_CONFIGURATION',
      `the coordinator at 127.0.0.1:${job.coordinator.address.port} does not speak TLS and rank 1 does: give the coordinator the job's TLS settings, or none to every rank`,
    ]);
  });

  it('reads GX1_TLS_CERT, GX1_TLS_KEY and GX1_TLS_CA, and names what is missing', () => {
    const env = { GX1_TLS_CERT: fixture('job.pem').pathname, GX1_TLS_KEY: fixture('job.key').pathname, GX1_TLS_CA: fixture('ca.pem').pathname };
    const tls = resolveTls(undefined, tlsOf(env))!;
    expect(tls.cert.toString()).toMatch(/BEGIN CERTIFICATE/);
    expect(tls.ca!.toString()).toMatch(/BEGIN CERTIFICATE/);
    expect(resolveTls(undefined, tlsOf({}))).toBeNull();
    expect(() => resolveTls(undefined, tlsOf({ GX1_TLS_CERT: env.GX1_TLS_CERT }))).toThrow('GX1_TLS_KEY is missing: TLS needs both a certificate and its key');
    expect(() => resolveTls(undefined, tlsOf({ GX1_TLS_CA: env.GX1_TLS_CA }))).toThrow(/GX1_TLS_CA is set without GX1_TLS_CERT and GX1_TLS_KEY/);
    expect(() => resolveTls(undefined, tlsOf({ ...env, GX1_TLS_KEY: '/nonexistent/key.pem' }))).toThrow(/^cannot read GX1_TLS_KEY "\/nonexistent\/key.pem": ENOENT/);
  });
});
