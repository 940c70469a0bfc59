/**
 * Jobs that start with the endpoint gather (#47 item 4, docs/protocol.md 8.3, revision 14): the
 * coordinator tells each rank its own entry and its successor's, the ranks gather the rest over
 * their own authenticated links, and then build the mesh on it: every pair of ranks exchanges
 * data, at 16 and 32 ranks, with a secret, and with a listener per rail. A rank that dies during
 * the gather is named by every other rank, quickly, and nothing hangs.
 */
import { createServer, type Server } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { peerEndpointFrame } from '../../lib/protocol/control-frames.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { connectChannel } from '../../lib/transport/connect-channel.js';
import { type FrameChannel, outgoing } from '../../lib/transport/frame-channel.js';
import { rejection, startCoordinator, type JobOptions, type RankOverrides, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
const raw: FrameChannel[] = [];
afterEach(async () => {
  for (const channel of raw.splice(0)) channel.destroy();
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

async function peerJob(worldSize: number, options: JobOptions = {}): Promise<TestJob> {
  const job = await startCoordinator(worldSize, { transport: 'tcp_peer', timeoutMs: 20_000, ...options });
  jobs.push(job);
  return job;
}

/** Every rank sends its rank to every other rank and receives every other's: each link of the mesh carried data. */
async function everyPairTalks(sessions: readonly RankSession[]): Promise<void> {
  const worldSize = sessions.length;
  const gathered = await Promise.all(sessions.map((session) => session.allToAll(Uint32Array.from({ length: worldSize }, () => session.rank))));
  for (const result of gathered) expect(Array.from(result as Uint32Array)).toEqual(Array.from({ length: worldSize }, (_, rank) => rank));
}

async function openAll(job: TestJob, overrides: RankOverrides = {}): Promise<RankSession[]> {
  return Promise.all(Array.from({ length: job.worldSize }, (_, rank) => job.openRank(rank, overrides)));
}

describe('jobs that start with the endpoint gather', () => {
  it.each([16, 32])('%i ranks in one process build their whole mesh from it', async (worldSize) => {
    const job = await peerJob(worldSize);
    const sessions = await openAll(job, { dataPlane: 'js' });
    expect(new Set(sessions.map((session) => session.transport))).toEqual(new Set(['tcp_peer']));
    await everyPairTalks(sessions);
  }, 60_000);

  it('16 ranks with a secret: the gather links authenticate as every direct link does', async () => {
    const secret = new Uint8Array(Buffer.from('rxccl-endpoint-gather-secret-0123'));
    const job = await peerJob(16, { secret });
    await everyPairTalks(await openAll(job, { secret, dataPlane: 'js' }));
  }, 60_000);

  it('7 ranks with a listener per rail: runs of entries in the per-rail layout', async () => {
    const job = await peerJob(7, { rails: 2 });
    const sessions = await openAll(job, { peerEndpoints: { listen: ['127.0.0.1:0', '127.0.0.2:0'], advertise: ['127.0.0.1', '127.0.0.2'] }, dataPlane: 'js' });
    await everyPairTalks(sessions);
    await Promise.all(sessions.map((session) => (session.rank === 0 ? session.send(6, 9, Uint32Array.of(42), { rail: 1 }) : Promise.resolve())));
    expect(Array.from((await sessions[6]!.receive(0, 9, { dtype: 'u32', count: 1 }, { rail: 1 })) as Uint32Array)).toEqual([42]);
  }, 60_000);

  it('a rank that dies during the gather (published, joined its control rail, then gone) is named by every other rank, and none hangs', async () => {
    const worldSize = 8;
    const dead = 5;
    const job = await peerJob(worldSize, { timeoutMs: 10_000 });
    const address = { host: '127.0.0.1', port: job.coordinator.address.port };
    const origin = { uniqueId: job.uniqueId, rank: dead, worldSize };
    // Rank 5 publishes a listener, so its partners (ranks 4, 3 and 1) dial it in the gather ...
    const listener: Server = await new Promise((resolve) => {
      const server = createServer((socket) => socket.destroy()).listen(0, '127.0.0.1', () => resolve(server));
    });
    const dying = (async () => {
      const collective = await connectChannel(address, { ...origin, rail: null, timeoutMs: 10_000 });
      raw.push(collective);
      collective.send(outgoing(peerEndpointFrame(origin, 1, `127.0.0.1:${(listener.address() as { port: number }).port}`)));
      await firstValueFrom(collective.frames$);
      const control = await connectChannel(address, { ...origin, rail: 0, timeoutMs: 10_000 });
      raw.push(control);
      // ... and dies before answering any of them: its listener, then every connection, closes.
      await new Promise((resolve) => listener.close(resolve));
      collective.destroy();
      control.destroy();
    })();
    const started = Date.now();
    const others = Array.from({ length: worldSize }, (_, rank) => rank).filter((rank) => rank !== dead);
    const errors = await Promise.all(others.map((rank) => rejection(job.openRank(rank, { dataPlane: 'js' }))));
    await dying;
    const elapsed = Date.now() - started;
    for (const error of errors) expect(error.message).toMatch(/\brank 5\b/);
    // Named well within the session timeout (10 s): nobody waited for it.
    expect(elapsed).toBeLessThan(5_000);
    await expect(job.coordinator.done).rejects.toThrow(/\brank 5\b/);
  }, 30_000);
});
