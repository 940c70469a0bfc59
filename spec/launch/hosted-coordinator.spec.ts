/**
 * Under a cluster launcher rank 0 hosts the coordinator in-process: every rank derives the same
 * address and id from its environment alone (torchrun's variables here, ranks in this process).
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { sessionOptionsFromEnvironment } from '../../lib/launch/environment.js';
import { keepHostedCoordinator } from '../../lib/launch/hosted-coordinator.js';
import type { Environment } from '../../lib/launch/job-environment.js';
import { openSession } from '../../lib/launch/open-session.js';

/** A port nothing listens on right now (the coordinator binds it a moment later). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const torchrun = (rank: number, port: number): Environment => ({
  RANK: String(rank),
  WORLD_SIZE: '3',
  MASTER_ADDR: '127.0.0.1',
  MASTER_PORT: String(port - 1),
  TORCHELASTIC_RUN_ID: 'hosted-coordinator-spec',
  GX1_TIMEOUT_MS: '10000',
});

describe('rank 0 hosts the coordinator', () => {
  it('runs a job from torchrun variables alone; rank 0 closes only once the others are done', async () => {
    const port = await freePort();
    // The other ranks start first: their connects retry until rank 0's coordinator listens.
    const discovered = await Promise.all([1, 2, 0].map((rank) => sessionOptionsFromEnvironment(torchrun(rank, port))));
    const options = [discovered[2]!, discovered[0]!, discovered[1]!];
    expect(options.map((option) => option.coordinator)).toEqual([`127.0.0.1:${port}`, `127.0.0.1:${port}`, `127.0.0.1:${port}`]);
    const sessions = await Promise.all(options.map((option) => keepHostedCoordinator(option, () => openSession(option))));
    const sums = await Promise.all(sessions.map((session) => session.allReduce(Float32Array.of(session.rank))));
    expect(sums.map((sum) => sum[0])).toEqual([3, 3, 3]);

    let rankZeroClosed = false;
    const closing = sessions[0]!.close().then(() => (rankZeroClosed = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(rankZeroClosed).toBe(false);
    await Promise.all([sessions[1]!.close(), sessions[2]!.close()]);
    await closing;
    expect(rankZeroClosed).toBe(true);
  }, 30_000);

  it('says how to fix a coordinator port that is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      await expect(sessionOptionsFromEnvironment(torchrun(0, port))).rejects.toThrow(
        new RegExp(`rank 0 hosts the job's coordinator \\(torchrun\\) and cannot bind coordinator to 127\\.0\\.0\\.1:${port}: .*EADDRINUSE.*; .*set GX1_COORDINATOR_PORT to a free one`),
      );
    } finally {
      blocker.close();
    }
  });
});
