/**
 * How a PeerMesh wires its links: per ordered pair and rail, one connection that carries data from
 * the listening rank to the dialling one (which reads it with `onread`), so a receive that names
 * its destination gets its payload written there by the kernel.
 */
import { openSockets } from '../helpers/open-sockets.js';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { AsyncSink } from 'ix/asynciterable';
import { asyncScheduler, lastValueFrom, merge } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { ElementType } from '../../lib/protocol/element-type.js';
import { type Frame, makeHeader } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { bindPeerListeners } from '../../lib/transport/peer-endpoint-config.js';
import type { CollectiveContext } from '../../lib/collectives/algorithm.js';
import { disseminationBarrier } from '../../lib/collectives/barrier/dissemination.js';
import { runScheduled } from '../../lib/collectives/run-scheduled.js';
import { ScheduleCache } from '../../lib/collectives/schedule/schedule-cache.js';
import { RemoteAbortError, TimeoutError } from '../../lib/errors.js';
import { LazyDeadlines } from '../../lib/transport/lazy-deadlines.js';
import type { ExpectedShape, MessageShape } from '../../lib/transport/links/links.js';
import { MeshLinks } from '../../lib/transport/links/mesh-links.js';
import type { RailClient } from '../../lib/transport/links/rail-client.js';
import { PeerMesh } from '../../lib/transport/peer-mesh.js';
import { PEER_LEFT_GRACE_MS } from '../../lib/transport/peer-left-error.js';
import { SessionFailure } from '../../lib/transport/session-failure.js';
import { BufferPool } from '../../lib/transport/buffer-pool.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * One rank's peer listeners on loopback and the connections they accept; `close` (also run after
 * the test) ends both.
 */
async function listening(rails: number) {
  const incoming = new AsyncSink<{ rail: number | null; socket: Socket }>();
  const listeners = await bindPeerListeners({ listenAddresses: [{ host: '127.0.0.1', port: 0 }], advertiseAddresses: [] }, rails, (rail, socket) => incoming.write({ rail, socket }));
  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    incoming.end();
    for (const server of listeners.servers) server.close();
  };
  cleanups.push(close);
  return { incoming, endpoints: listeners.endpoints, close };
}

/** A whole mesh of `worldSize` ranks with `rails` rails, in this process. */
async function meshes(worldSize: number, rails: number): Promise<PeerMesh[]> {
  const uniqueId = UniqueId.random();
  const bound = await Promise.all(Array.from({ length: worldSize }, () => listening(rails)));
  const endpoints = bound.map(({ endpoints }) => Array.from({ length: rails }, (_, rail) => endpoints[rail] ?? endpoints[0]!));
  const all = await Promise.all(
    bound.map(({ incoming }, rank) =>
      PeerMesh.connect({ identity: { uniqueId, rank, worldSize, rails }, endpoints, incoming, timeoutMs: 10_000, scheduler: asyncScheduler }),
    ),
  );
  cleanups.push(() => all.forEach((mesh) => mesh.close()));
  return all;
}

const u8 = (count: number) => ({ elementType: ElementType.U8, count });

/** One message sent with `PeerMesh.write`, settled once the socket took it (or it failed). */
function sent(mesh: PeerMesh, rail: number, destination: number, tag: bigint, shape: MessageShape, payload: Uint8Array, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => void mesh.write(rail, destination, tag, shape, payload, timeoutMs, { next: resolve, error: reject }));
}

/** The next matching message, received with `PeerMesh.post` (`into`: where it may be read straight into). */
function received(mesh: PeerMesh, rail: number, source: number, tag: bigint, shape: ExpectedShape, timeoutMs: number, into: Uint8Array | null = null): Promise<Frame> {
  return new Promise((resolve, reject) => void mesh.post(rail, source, tag, shape, timeoutMs, into, { next: resolve, error: reject }));
}

const noProcFds = openSockets() === null;
if (noProcFds) console.warn('spec/transport/peer-mesh-links.spec.ts: the open-socket count test is skipped: no /proc/self/fd here (not Linux)');

describe('PeerMesh links', () => {
  it.skipIf(noProcFds)('a setup that fails after data links were handed over closes them: every socket it opened is closed (Linux: /proc/self/fd)', async () => {
    const before = openSockets()!;
    const uniqueId = UniqueId.random();
    // Rank 2 takes connections and never answers: ranks 0 and 1 mesh with each other (data links
    // handed over included), then time out waiting for it.
    const silent = createServer((socket) => socket.on('error', () => undefined));
    const held: Socket[] = [];
    silent.on('connection', (socket) => held.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const bound = await Promise.all([0, 1].map(() => listening(1)));
    const endpoints = [...bound.map(({ endpoints: [endpoint] }) => [endpoint!]), [{ host: '127.0.0.1', port: (silent.address() as { port: number }).port }]];
    const failures = await Promise.all(
      bound.map(({ incoming }, rank) =>
        PeerMesh.connect({ identity: { uniqueId, rank, worldSize: 3, rails: 1, dataLinks: true }, endpoints, incoming, timeoutMs: 2_000, scheduler: asyncScheduler }).then(
          () => null,
          (error: unknown) => error,
        ),
      ),
    );
    expect(failures.map((error) => (error as Error).message)).toEqual(['rank 0 direct peer mesh setup timed out', 'rank 1 direct peer mesh setup timed out']);
    for (const { close } of bound) close();
    for (const socket of held) socket.destroy();
    silent.close();
    // Closing is asynchronous: the count comes back within a few event-loop turns.
    for (let turn = 0; turn < 50 && openSockets()! > before; turn++) await new Promise((resolve) => setTimeout(resolve, 20));
    // At most as many as before (a socket of an earlier test may have finished closing meanwhile).
    expect(openSockets()).toBeLessThanOrEqual(before);
  });

  it('dials one link per peer and rail to receive on and accepts one per peer and rail to send on', async () => {
    const all = await meshes(3, 2);
    for (const mesh of all) {
      const present = (direction: 'inbound' | 'outbound') =>
        [0, 1, 2].flatMap((peer) => [0, 1].filter((rail) => mesh.link(direction, peer, rail) !== undefined).map((rail) => `${peer}/${rail}`));
      const expected = [0, 1, 2].filter((peer) => peer !== mesh.identity.rank).flatMap((peer) => [`${peer}/0`, `${peer}/1`]);
      expect(present('inbound')).toEqual(expected);
      expect(present('outbound')).toEqual(expected);
      expect(mesh.sockets).toHaveLength(2 * expected.length);
    }
    // Rank 0's inbound link from rank 1 on rail 1 is rank 1's outbound link to rank 0 on rail 1.
    const zeroIn = all[0]!.link('inbound', 1, 1)!.socket;
    const oneOut = all[1]!.link('outbound', 0, 1)!.socket;
    expect(zeroIn.localPort).toBe(oneOut.remotePort);
  });

  it('writes a payload straight into the destination a posted receive named; one that came first is copied from pooled memory', async () => {
    const [zero, one] = (await meshes(2, 1)) as [PeerMesh, PeerMesh];
    const payload = new Uint8Array(3 << 20).map((_, index) => (index * 13) & 0xff);
    const into = new Uint8Array(payload.length);
    const posted = received(zero, 0, 1, 5n, u8(payload.length), 10_000, into);
    await sent(one, 0, 0, 5n, u8(payload.length), payload, 10_000);
    const frame = await posted;
    expect(frame.payload).toBe(into);
    expect(Buffer.from(into).equals(Buffer.from(payload))).toBe(true);

    // Sent before its receive was posted: it waits in other memory, and the receive gets that.
    await sent(one, 0, 0, 6n, u8(payload.length), payload, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const late = new Uint8Array(payload.length);
    const parked = await received(zero, 0, 1, 6n, u8(payload.length), 10_000, late);
    expect(parked.payload).not.toBe(late);
    expect(Buffer.from(parked.payload).equals(Buffer.from(payload))).toBe(true);
  });

  it('a receive from any rank never has its destination written: it takes the message from whoever sends', async () => {
    const [zero, one, two] = (await meshes(3, 1)) as [PeerMesh, PeerMesh, PeerMesh];
    const into = new Uint8Array(4);
    const posted = received(zero, 0, 0xffffffff, 9n, u8(4), 10_000, into);
    await sent(two, 0, 0, 9n, u8(4), Uint8Array.of(1, 2, 3, 4), 10_000);
    const frame = await posted;
    expect(frame.header.sourceRank).toBe(2);
    expect([...frame.payload]).toEqual([1, 2, 3, 4]);
    expect([...into]).toEqual([0, 0, 0, 0]);
    void one;
  });

  it("a leaving peer's last messages still arrive when the link this rank sends on ends first; the end of the one they came on wakes the rest", async () => {
    const [zero, one] = (await meshes(2, 2)) as [PeerMesh, PeerMesh];
    const pending = received(zero, 1, 1, 7n, u8(3), 10_000);
    const later = received(zero, 1, 1, 8n, u8(1), 10_000);
    // Rank 1 ends the rail 1 link rank 0 sends on (its inbound), as a leaving rank does, before its
    // message on the other direction is written: TCP orders nothing across the two sockets.
    one.link('inbound', 0, 1)!.finish();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await sent(one, 1, 0, 7n, u8(3), Uint8Array.of(1, 2, 3), 1_000);
    expect(Array.from((await pending).payload)).toEqual([1, 2, 3]);
    // Sends to it fail at once; receives on rail 1 fail once that link's data ended.
    await expect(sent(zero, 0, 1, 9n, u8(1), Uint8Array.of(1), 1_000)).rejects.toThrow('direct peer rank 1 left');
    one.link('outbound', 0, 1)!.finish();
    await expect(later).rejects.toThrow('direct peer rank 1 left');
    await expect(received(zero, 1, 1, 9n, u8(1), 1_000)).rejects.toThrow('direct peer rank 1 left');
  });

  it('data on the wrong direction of a link fails the receiving rank, naming the sender and the rail', async () => {
    const [zero, one] = (await meshes(2, 1)) as [PeerMesh, PeerMesh];
    const failed = new Promise<unknown>((resolve) => (zero.failureHandler = resolve));
    one.detectedFailureHandler = () => undefined;
    // Rank 1 writes a Send on the link it dialled to rank 0: that link carries data only from rank 0.
    const header = makeHeader({ uniqueId: zero.identity.uniqueId, opcode: Opcode.Send, elementType: ElementType.U8, sourceRank: 1, destinationRank: 0, worldSize: 2, tag: 1n, elementCount: 1 }, 1);
    one.link('inbound', 0, 0)!.send({ header, parts: [Uint8Array.of(1)] });
    const error = (await failed) as Error;
    expect(error.message).toBe('direct peer rank 1 sent Send on the rail 0 link it dialled, which carries data only from rank 0 to rank 1');
    await expect(received(zero, 0, 1, 1n, u8(1), 1_000)).rejects.toBe(error);
  });
});

/** MeshLinks over `mesh`, with a control channel that records the aborts it is asked to send. */
function meshLinks(mesh: PeerMesh) {
  const aborts: string[] = [];
  const control = { abort: (message: string) => void aborts.push(message), close: () => undefined } as unknown as RailClient;
  const failure = new SessionFailure();
  return { links: new MeshLinks(mesh, control, failure, () => 10_000), aborts, failure };
}

describe('MeshLinks', () => {
  it('a peer that leaves under two receives aborts the job once: the receive its collective already gave up on says nothing', async () => {
    const [zero, one] = (await meshes(2, 1)) as [PeerMesh, PeerMesh];
    const { links, aborts } = meshLinks(zero);
    const both = lastValueFrom(merge(links.receive(0, 1, 1n, u8(1)), links.receive(0, 1, 2n, u8(1))));
    one.close();
    await expect(both).rejects.toThrow('direct peer rank 1 left');
    expect(aborts).toEqual(['direct peer rank 1 left']);
  });

  it(`blames a peer that left only after ${PEER_LEFT_GRACE_MS} ms, and not at all when the session fails meanwhile (the Abort naming the rank that died)`, async () => {
    // Alone: the receive fails with the peer's departure, announced once the grace is over.
    const [zero, one] = (await meshes(2, 1)) as [PeerMesh, PeerMesh];
    const { links, aborts } = meshLinks(zero);
    const started = performance.now();
    const alone = lastValueFrom(links.receive(0, 1, 1n, u8(1)));
    one.close();
    await expect(alone).rejects.toThrow('direct peer rank 1 left');
    // A timer never fires early by more than Node's millisecond rounding.
    expect(performance.now() - started).toBeGreaterThanOrEqual(PEER_LEFT_GRACE_MS - 1);
    expect(aborts).toEqual(['direct peer rank 1 left']);

    // The session fails within the grace: the receive ends with that reason, and nothing is announced.
    const [two, three] = (await meshes(2, 1)) as [PeerMesh, PeerMesh];
    const told = meshLinks(two);
    const graced = lastValueFrom(told.links.receive(0, 1, 1n, u8(1)));
    const gone = once(two.link('inbound', 1, 0)!.socket, 'close');
    three.close();
    await gone;
    const truer = new RemoteAbortError('rank 3 aborted: direct peer rank 2 left');
    told.failure.fail(truer);
    await expect(graced).rejects.toBe(truer);
    expect(told.aborts).toEqual([]);
  });

  it("the session's failure ends a pending collective as the session's, then fails the mesh, and nobody announces it again", async () => {
    const [zero] = (await meshes(2, 1)) as [PeerMesh, PeerMesh];
    const { links, aborts, failure } = meshLinks(zero);
    const announced: string[] = [];
    const context = {
      rank: 0,
      worldSize: 2,
      deadlines: new LazyDeadlines(asyncScheduler),
      timeoutMs: () => 10_000,
      nextMeshSequence: () => 0n,
      agreement: 'mesh',
      scratch: new BufferPool(),
      schedules: new ScheduleCache(),
      ringOrder: [0, 1],
      ringChannels: 1,
      topologyGroups: null,
      railOrder: null,
      pieceBytes: 1 << 20,
      abort: (reason: string) => void announced.push(reason),
    } as unknown as CollectiveContext;
    cleanups.push(() => context.deadlines.stop());
    // Rank 1 never joins: the barrier waits on its header when the session fails (a control-rail timeout, say).
    const pending = lastValueFrom(runScheduled('barrier', 'dissemination', disseminationBarrier, 'js', links, {}, context).pipe(failure.untilEnded()), { defaultValue: undefined });
    const cause = new TimeoutError('point-to-point Heartbeat with tag 0 on rail 0');
    failure.fail(cause);
    await expect(pending).rejects.toBe(cause);
    expect(announced).toEqual([]);
    expect(zero.failed).toBe(true);
    expect(() => zero.post(0, 1, 2n, u8(1), 1_000, null, { next: () => undefined, error: () => undefined })).toThrow(cause);
    expect(aborts).toEqual([]);
  });

  it('a send the socket pushed back fails when its peer leaves before taking it, instead of reporting success', async () => {
    const [zero, one] = (await meshes(2, 1)) as [PeerMesh, PeerMesh];
    const payload = new Uint8Array(64 << 20);
    const sending = sent(one, 0, 0, 1n, u8(payload.length), payload, 10_000);
    zero.close();
    await expect(sending).rejects.toThrow('direct peer rank 0 left');
  });

  it('refuses a peer or rail outside the mesh instead of using another link', async () => {
    const [zero] = (await meshes(2, 1)) as [PeerMesh, PeerMesh];
    await expect(sent(zero, 1, 1, 1n, u8(1), Uint8Array.of(1), 1_000)).rejects.toThrow('rank 1 rail 1 is not a link of this mesh (2 ranks, 1 rail)');
    await expect(received(zero, 0, 2, 1n, u8(1), 1_000)).rejects.toThrow('rank 2 rail 0 is not a link of this mesh (2 ranks, 1 rail)');
  });
});
