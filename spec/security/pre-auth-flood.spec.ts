/**
 * Issue #33, cases 1 and 2: connections that never authenticate cannot exhaust a coordinator's
 * descriptors or keep a job's ranks out. Silent (or 3-byte) TLS connections are closed at the
 * handshake deadline and count against the cap from their TCP accept; past the cap a newcomer
 * evicts the oldest of the busiest source, so a flood never locks the ranks out (and a rank the
 * listener closes early dials again, then says the listener was saturated).
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionOptionsFromEnvironment } from '../../lib/launch/environment.js';
import { openSession } from '../../lib/launch/open-session.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { connectChannel } from '../../lib/transport/connect-channel.js';
import { generateSecret } from '../../lib/transport/job-secret.js';
import { type Running, startRxccl } from '../cli/rxccl-process.js';
import { rejection } from '../helpers/job.js';

const fixture = (name: string) => new URL(`fixtures/tls/${name}`, import.meta.url).pathname;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const descriptors = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `rxccl coordinator` in its own process (so its descriptors are its own) and the line its ranks need. */
async function coordinatorProcess(worldSize: number, env: NodeJS.ProcessEnv = {}): Promise<{ running: Running; variables: Record<string, string>; port: number }> {
  const running = startRxccl(['coordinator', '--world-size', String(worldSize), '--bind', '127.0.0.1:0'], env);
  cleanups.push(() => running.child.kill('SIGKILL'));
  const line = await running.firstLine();
  const variables = Object.fromEntries(line.split(' ').map((pair) => pair.split('=') as [string, string]));
  return { running, variables, port: Number(variables.GX1_COORDINATOR!.split(':')[1]) };
}

async function ranks(variables: Record<string, string>, worldSize: number, extra: Record<string, string> = {}) {
  const sessions = await Promise.all(
    Array.from({ length: worldSize }, async (_, rank) => openSession(await sessionOptionsFromEnvironment({ ...variables, ...extra, GX1_RANK: String(rank) }))),
  );
  cleanups.push(() => Promise.all(sessions.map((session) => session.close())));
  const sums = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.of(session.rank + 1))));
  const expected = (worldSize * (worldSize + 1)) / 2;
  expect(sums.map((sum) => Array.from(sum))).toEqual(Array(worldSize).fill([expected]));
}

describe('connections that never authenticate', () => {
  it('3,000 silent or 3-byte TLS connections leave the coordinator within 64 descriptors of its baseline after the deadline; then the job runs', async () => {
    const tls = { GX1_TLS_CERT: fixture('job.pem'), GX1_TLS_KEY: fixture('job.key'), GX1_TLS_CA: fixture('ca.pem') };
    const { running, variables, port } = await coordinatorProcess(2, tls);
    const pid = running.child.pid!;
    const baseline = descriptors(pid);
    const strangers: Socket[] = [];
    cleanups.push(() => strangers.forEach((socket) => socket.destroy()));
    for (let index = 0; index < 3_000; index++) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      // Half say nothing; half start a TLS record and stop (a slowloris of the TLS handshake).
      if (index % 2 === 1) socket.once('connect', () => socket.write(Buffer.from([0x16, 0x03, 0x01])));
      strangers.push(socket);
      if (index % 200 === 199) await sleep(20);
    }
    // Past the cap the coordinator holds at most 1024 of them, whatever the flood.
    await sleep(1_000);
    expect(descriptors(pid) - baseline).toBeLessThan(1_024 + 64);
    // The TLS handshake deadline is the JOIN timeout (10 s): then none is left.
    const deadline = Date.now() + 20_000;
    while (descriptors(pid) - baseline >= 64 && Date.now() < deadline) await sleep(250);
    expect(descriptors(pid) - baseline).toBeLessThan(64);
    await ranks(variables, 2, tls);
  }, 60_000);

  it('a job of 4 ranks starts while a stranger without the secret opens 200 connections a second and never speaks', async () => {
    const { variables, port } = await coordinatorProcess(4);
    // The attacker is its own process, so the test's event loop does not pace it.
    const attacker = spawn(
      process.execPath,
      [
        '-e',
        `const net = require('node:net'); const held = [];
         setInterval(() => { for (let i = 0; i < 2; i++) { const s = net.connect(${port}, '127.0.0.1'); s.on('error', () => {}); held.push(s); } }, 10);`,
      ],
      { stdio: 'ignore' },
    );
    cleanups.push(() => attacker.kill('SIGKILL'));
    // Long enough for the flood to fill the cap of 1024 (about 5 s at 200 a second).
    await sleep(7_000);
    const started = Date.now();
    await ranks(variables, 4);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(attacker.exitCode).toBeNull();
  }, 90_000);

  it('a rank whose connections a saturated listener keeps closing dials again, then fails with TIMEOUT saying so', async () => {
    let accepted = 0;
    const saturated = createServer((socket) => {
      accepted += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => saturated.listen(0, '127.0.0.1', () => resolve()));
    cleanups.push(() => saturated.close());
    const { port } = saturated.address() as { port: number };
    const started = Date.now();
    const error = await rejection(
      connectChannel({ host: '127.0.0.1', port }, { uniqueId: UniqueId.random(), rank: 2, worldSize: 4, rail: null, timeoutMs: 2_000, secret: new TextEncoder().encode(generateSecret()) }),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(accepted).toBeGreaterThan(2);
    expect(error.code).toBe('TIMEOUT');
    // One of the connections accepted is the rank's TLS probe after the first early close (it asks whether a TLS listener closed it).
    expect(error.message).toMatch(
      new RegExp(
        `^rank 2 connecting to coordinator 127\\.0\\.0\\.1:${port} timed out after \\d+ ms: it closed ${accepted - 1} connections before authenticating them, so its listener is most likely saturated by connections that never authenticate`,
      ),
    );
  });

  it('a rank whose connection is closed early by a listener that then stops listening fails at once, saying so', async () => {
    const stopping = createServer((socket) => {
      socket.destroy();
      stopping.close();
    });
    await new Promise<void>((resolve) => stopping.listen(0, '127.0.0.1', () => resolve()));
    const { port } = stopping.address() as { port: number };
    const started = Date.now();
    const error = await rejection(
      connectChannel({ host: '127.0.0.1', port }, { uniqueId: UniqueId.random(), rank: 1, worldSize: 2, rail: null, timeoutMs: 30_000, secret: new TextEncoder().encode(generateSecret()) }),
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error.code).toBe('CHANNEL_CLOSED');
    expect(error.message).toBe(`coordinator 127.0.0.1:${port} closed rank 1's connection before authenticating it, then refused the next: it stopped listening`);
  });
});
