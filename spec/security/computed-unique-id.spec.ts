/**
 * Attack 2 of issue #12, multi-process: under torchrun (Slurm and Kubernetes alike) the unique id
 * is computed from public facts, so an outsider computes it too. With the job's secret
 * (GX1_SECRET on every rank) the outsider is refused before it joins: it neither takes rank 1's
 * place nor reads rank 0's data, and the real ranks finish their job.
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { discoverJob } from '../../lib/launch/discover-job.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { connectChannel } from '../../lib/transport/connect-channel.js';
import { generateSecret } from '../../lib/transport/job-secret.js';
import { rejection, sleep } from '../helpers/job.js';
import { killAll, resultOf, spawnRank } from '../helpers/rank-process.js';

afterEach(() => killAll());

/** A port whose successor is free too (torchrun's coordinator goes one above MASTER_PORT). */
async function masterPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port - 1;
}

/** Retries until the coordinator rank 0 hosts accepts connections. */
async function listening(port: number): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const up = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(true));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(false)));
    });
    if (up) return;
    await sleep(50);
  }
  throw new Error(`nothing listens on ${port}`);
}

describe('a unique id computed from public facts', () => {
  it('lets an outsider neither join as rank 1 nor lock the real rank 1 out', async () => {
    const port = await masterPort();
    const torchrun = { WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), TORCHELASTIC_RUN_ID: 'job-42' };
    const secret = generateSecret();
    // rxccl's own variables are blank: the ranks discover torchrun's.
    const blank = { GX1_COORDINATOR: '', GX1_UNIQUE_ID: '', GX1_RANK: '', GX1_WORLD_SIZE: '' };
    const rank = (index: number) =>
      spawnRank({
        coordinator: '',
        uniqueId: '',
        rank: index,
        worldSize: 2,
        timeoutMs: 30_000,
        env: { ...blank, ...torchrun, RANK: String(index), GX1_SECRET: secret },
        script: 'spec/security/fixtures/rank.ts',
        args: ['allreduce'],
      });
    const zero = rank(0);
    // The outsider computes what every rank computes, from the same public facts.
    const job = discoverJob({ ...torchrun, RANK: '1' });
    await listening(job.coordinator.port);
    const joinAs = { uniqueId: UniqueId.fromHex(job.uniqueId), rank: 1, worldSize: 2, rail: null, timeoutMs: 10_000 };

    const withoutSecret = await rejection(connectChannel(job.coordinator, joinAs));
    expect(withoutSecret.code).toBe('AUTHENTICATION');
    expect(withoutSecret.message).toMatch(/requires the job's secret/);
    const guessed = await rejection(connectChannel(job.coordinator, { ...joinAs, secret: new Uint8Array(Buffer.from(generateSecret())) }));
    expect(guessed.message).toMatch(/authentication failed/);

    const one = rank(1);
    await Promise.all([zero.waitFor(/^DONE$/), one.waitFor(/^DONE$/)]);
    expect(resultOf(zero, 'allreduce')).toEqual([3]);
    expect(resultOf(one, 'allreduce')).toEqual([3]);
    expect(one.stderr()).not.toMatch(/joined twice/);
  }, 60_000);
});
