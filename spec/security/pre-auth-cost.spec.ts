/**
 * Attack 4 of issue #12: what an unauthenticated connection costs the coordinator. A header that
 * declares 1 GiB is refused at the header, before any payload byte (so nothing is buffered or
 * reserved); a slowloris is dropped at its handshake timeout; past the cap on connections in
 * their handshake, a new one evicts the oldest (transport/admission.ts). The coordinator's memory stays flat and the
 * real job still runs.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import type { RxcclError } from '../../lib/errors.js';
import { sessionOptionsFromEnvironment } from '../../lib/launch/environment.js';
import { openSession } from '../../lib/launch/open-session.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { frameText, makeHeader } from '../../lib/protocol/frame.js';
import { encodeHeader } from '../../lib/protocol/header.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { generateSecret } from '../../lib/transport/job-secret.js';
import { type Running, startRxccl } from '../cli/rxccl-process.js';
import { startCoordinator } from '../helpers/job.js';
import { type RawConnection, rawConnection } from '../helpers/raw-socket.js';

const GIB = 2 ** 30;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function raw(port: number, closeWithinMs = 10_000): RawConnection {
  const connection = rawConnection(port, closeWithinMs);
  cleanups.push(() => connection.socket.destroy());
  return connection;
}

/** A JOIN header that declares a 1 GiB payload (a valid header: the size is within the protocol's limit). */
function hugeJoin(uniqueId: UniqueId): Uint8Array {
  return encodeHeader(makeHeader({ uniqueId, opcode: Opcode.Join, elementType: ElementType.U8, sourceRank: 1, worldSize: 2, elementCount: GIB }, GIB));
}

function residentBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith('VmRSS:'))!;
  return Number(/(\d+)/.exec(line)![1]) * 1024;
}

describe('the cost of unauthenticated connections to a coordinator', () => {
  it('4 connections declaring 1 GiB and sending 16 MiB each are refused at the header; RSS stays flat; the job runs (multi-process)', async () => {
    const coordinator: Running = startRxccl(['coordinator', '--world-size', '2', '--bind', '127.0.0.1:0']);
    cleanups.push(() => coordinator.child.kill('SIGKILL'));
    const line = await coordinator.firstLine();
    const variables = Object.fromEntries(line.split(' ').map((pair) => pair.split('=') as [string, string]));
    const port = Number(variables.GX1_COORDINATOR!.split(':')[1]);
    const pid = coordinator.child.pid!;
    const before = residentBytes(pid);

    const attackers = Array.from({ length: 4 }, () => raw(port));
    await Promise.all(attackers.map((attacker) => attacker.connected));
    const filler = new Uint8Array(16 * 2 ** 20).fill(0x41);
    for (const attacker of attackers) {
      attacker.socket.on('error', () => undefined);
      attacker.socket.write(hugeJoin(UniqueId.random()));
      attacker.socket.write(filler);
    }
    const outcomes = await Promise.all(attackers.map((attacker) => attacker.outcome));
    for (const outcome of outcomes) {
      expect(outcome.dropped).toBe(true);
      expect(outcome.frames.map((frame) => Opcode[frame.header.opcode])).toEqual(['AuthChallenge', 'Abort']);
      expect(frameText(outcome.frames[1]!)).toBe(
        'connection rejected: authentication required: this job has a secret, and the connection opened with Join declaring 1073741824 payload bytes instead of an AuthResponse of 64',
      );
    }
    expect(residentBytes(pid) - before).toBeLessThan(48 * 2 ** 20);

    const sessions = await Promise.all([0, 1].map(async (rank) => openSession(await sessionOptionsFromEnvironment({ ...variables, GX1_RANK: String(rank) }))));
    const sums = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.of(session.rank + 1))));
    expect(sums.map((sum) => Array.from(sum))).toEqual([[3], [3]]);
    await Promise.all(sessions.map((session) => session.close()));
    expect((await coordinator.finished).code).toBe(0);
  }, 60_000);

  it('without a secret too, a JOIN declaring 1 GiB is refused at its header, at once', async () => {
    const uniqueId = UniqueId.random();
    const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize: 2, joinTimeoutMs: 10_000 }, {});
    cleanups.push(() => coordinator.close());
    const attacker = raw(coordinator.address.port);
    await attacker.connected;
    const started = Date.now();
    // Only the header: a coordinator that waited for the payload would answer after its JOIN timeout.
    attacker.socket.write(hugeJoin(uniqueId));
    const outcome = await attacker.outcome;
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(outcome.frames.map((frame) => frameText(frame))).toEqual(['connection rejected: first rank frame must be an empty JOIN']);
    expect(outcome.frames[0]!.header.uniqueId.toHex()).toBe('0'.repeat(32));
  });

  it('slowloris connections are dropped at their handshake timeout, the oldest evicted past the cap; then the job runs', async () => {
    const secret = generateSecret();
    const job = await startCoordinator(2, { secret, joinTimeoutMs: 500, maxUnauthenticatedConnections: 8 });
    cleanups.push(() => job.dispose());
    const refusals: RxcclError[] = [];
    job.coordinator.rejections$.subscribe((error) => refusals.push(error));
    const slow = Array.from({ length: 20 }, () => raw(job.coordinator.address.port));
    await Promise.all(slow.map((connection) => connection.connected));
    for (const connection of slow) connection.socket.write(Buffer.from('GX1F\x01\x00'));
    const started = Date.now();
    const outcomes = await Promise.all(slow.map((connection) => connection.outcome));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(outcomes.every((outcome) => outcome.dropped)).toBe(true);
    // Every one was challenged; the 12 oldest were evicted by newer ones, the last 8 timed out.
    expect(outcomes.every((outcome) => Opcode[outcome.frames[0]!.header.opcode] === 'AuthChallenge')).toBe(true);
    expect(outcomes.slice(0, 12).every((outcome) => outcome.frames.length === 1)).toBe(true);
    expect(outcomes.slice(12).map((outcome) => frameText(outcome.frames.at(-1)!))).toEqual(Array(8).fill('connection rejected: no JOIN within 500 ms'));
    expect(refusals.filter((error) => error.message === 'too many unauthenticated connections (8): closed the oldest of the 8 from 127.0.0.1')).toHaveLength(12);
    expect(refusals.filter((error) => error.message === 'no JOIN within 500 ms')).toHaveLength(8);
    const sessions = await Promise.all([0, 1].map((rank) => job.openRank(rank, { secret })));
    const sums = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.of(session.rank + 1))));
    expect(sums.map((sum) => Array.from(sum))).toEqual([[3], [3]]);
  });
});
