/**
 * The direct peer mesh with links on demand (#47 item 3, lib/transport/peer-mesh.ts `onDemand`),
 * over real loopback sockets in this process: nothing is dialled at the start; a pair whose two
 * ranks send to each other first, at the same moment, ends with one link each way (no "connected
 * twice"); a receive from any rank takes a first message from a peer this rank never dialled; the
 * native plane's data links of a pair open the same way from both ends at once; and a dial that
 * fails names the peer and its endpoint, fails the mesh (so the job hears of it) and does so
 * within the message's timeout; a dial that fails once nothing waits for the pair fails nothing
 * until the pair's next need.
 */
import { createServer, type Socket } from 'node:net';
import { AsyncSink } from 'ix/asynciterable';
import { asyncScheduler } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';
import { ANY_RANK } from '../../lib/protocol/constants.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import type { Frame } from '../../lib/protocol/frame.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { bindPeerListeners } from '../../lib/transport/peer-endpoint-config.js';
import { PeerMesh } from '../../lib/transport/peer-mesh.js';

const meshesToClose: PeerMesh[] = [];
afterEach(() => {
  for (const mesh of meshesToClose.splice(0)) mesh.close();
});

/**
 * `worldSize` ranks' meshes with links on demand, in this process; `closed` ranks' listeners are
 * closed before any dial; the others dial rank r at `dialledAt[r]` where one is given.
 */
async function onDemandMeshes(worldSize: number, { dataLinks = false, closed = [] as number[], dialledAt = new Map<number, Endpoint>() } = {}): Promise<PeerMesh[]> {
  const uniqueId = UniqueId.random();
  const bound = await Promise.all(
    Array.from({ length: worldSize }, async () => {
      const incoming = new AsyncSink<{ rail: number | null; socket: Socket }>();
      const listeners = await bindPeerListeners({ listenAddresses: [{ host: '127.0.0.1', port: 0 }], advertiseAddresses: [] }, 1, (rail, socket) => incoming.write({ rail, socket }));
      const closeListeners = () => {
        incoming.end();
        for (const server of listeners.servers) server.close();
      };
      return { incoming, endpoints: listeners.endpoints, closeListeners };
    }),
  );
  for (const rank of closed) bound[rank]!.closeListeners();
  const endpoints = bound.map(({ endpoints }, rank) => [dialledAt.get(rank) ?? endpoints[0]!]);
  const meshes = await Promise.all(
    bound.map(({ incoming, closeListeners }, rank) =>
      PeerMesh.connect({ identity: { uniqueId, rank, worldSize, rails: 1, dataLinks }, endpoints, incoming, timeoutMs: 5_000, scheduler: asyncScheduler, onDemand: { closeListeners } }),
    ),
  );
  meshesToClose.push(...meshes);
  return meshes;
}

type Endpoint = Awaited<ReturnType<typeof bindPeerListeners>>['endpoints'][number];

const u8 = (count: number) => ({ elementType: ElementType.U8, count });

function sent(mesh: PeerMesh, destination: number, tag: bigint, payload: Uint8Array, timeoutMs = 5_000): Promise<void> {
  return new Promise((resolve, reject) => void mesh.write(0, destination, tag, u8(payload.length), payload, timeoutMs, { next: resolve, error: reject }));
}

function received(mesh: PeerMesh, source: number, tag: bigint, count: number, timeoutMs = 5_000): Promise<Frame> {
  return new Promise((resolve, reject) => void mesh.post(0, source, tag, u8(count), timeoutMs, null, { next: resolve, error: reject }));
}

/** The links `mesh` holds to `peer`: [inbound, outbound], each 0 or 1. */
const linksTo = (mesh: PeerMesh, peer: number) => [mesh.link('inbound', peer, 0), mesh.link('outbound', peer, 0)].map((link) => (link === undefined ? 0 : 1));

describe('links on demand', () => {
  it('dials nothing at the start; two ranks first sending to each other at once end with one link each way', async () => {
    const [zero, one, two] = await onDemandMeshes(3);
    expect([zero!, one!, two!].map((mesh) => mesh.sockets.length)).toEqual([0, 0, 0]);
    const [, , fromOne, fromZero] = await Promise.all([
      sent(zero!, 1, 4n, Uint8Array.of(10, 11)),
      sent(one!, 0, 4n, Uint8Array.of(20, 21)),
      received(zero!, 1, 4n, 2),
      received(one!, 0, 4n, 2),
    ]);
    expect(Array.from(fromOne.payload)).toEqual([20, 21]);
    expect(Array.from(fromZero.payload)).toEqual([10, 11]);
    expect(linksTo(zero!, 1)).toEqual([1, 1]);
    expect(linksTo(one!, 0)).toEqual([1, 1]);
    // Rank 2 was used by nobody: no link to it anywhere, none of its own.
    expect([linksTo(zero!, 2), linksTo(one!, 2), two!.sockets.length]).toEqual([[0, 0], [0, 0], 0]);
    expect([zero!, one!].map((mesh) => mesh.sockets.length)).toEqual([2, 2]);
    // Later messages go on the same links, in order.
    const later = Promise.all([received(one!, 0, 5n, 1), received(one!, 0, 5n, 1)]);
    await Promise.all([sent(zero!, 1, 5n, Uint8Array.of(1)), sent(zero!, 1, 5n, Uint8Array.of(2))]);
    expect((await later).map((frame) => frame.payload[0])).toEqual([1, 2]);
    expect([zero!, one!].map((mesh) => mesh.sockets.length)).toEqual([2, 2]);
  });

  it('a receive from any rank takes the first message of a peer this rank never dialled; messages sent before the link opened keep their order', async () => {
    const [zero, one] = await onDemandMeshes(2);
    const anyFirst = new Promise<Frame>((resolve, reject) => void one!.post(0, ANY_RANK, 9n, u8(1), 5_000, null, { next: resolve, error: reject }));
    await Promise.all([sent(zero!, 1, 9n, Uint8Array.of(1)), sent(zero!, 1, 9n, Uint8Array.of(2)), sent(zero!, 1, 9n, Uint8Array.of(3))]);
    expect((await anyFirst).header.sourceRank).toBe(0);
    expect((await anyFirst).payload[0]).toBe(1);
    const rest = await Promise.all([received(one!, 0, 9n, 1), received(one!, 0, 9n, 1)]);
    expect(rest.map((frame) => frame.payload[0])).toEqual([2, 3]);
  });

  it("a pair's data links open from both ends at once: one each way, in the plane's sockets on both ranks", async () => {
    const [zero, one] = await onDemandMeshes(2, { dataLinks: true });
    await Promise.all([zero!.openDataLink(1, 0, 5_000), one!.openDataLink(0, 0, 5_000), zero!.openDataLink(1, 0, 5_000)]);
    for (const [mesh, peer] of [[zero!, 1], [one!, 0]] as const) {
      expect(mesh.dataLinks!.send.map((socket) => socket !== undefined)).toEqual([0, 1].map((rank) => rank === peer));
      expect(mesh.dataLinks!.receive.map((socket) => socket !== undefined)).toEqual([0, 1].map((rank) => rank === peer));
      expect(mesh.sockets.length).toBe(0);
    }
    // Data links are the native plane's: the mesh's owner closes them.
    for (const socket of [...zero!.dataLinks!.send, ...zero!.dataLinks!.receive, ...one!.dataLinks!.send, ...one!.dataLinks!.receive]) socket?.destroy();
  });

  it('a dial that fails names the peer and its endpoint, fails the mesh, and comes within the timeout', async () => {
    const [zero] = await onDemandMeshes(2, { closed: [1] });
    const failures: unknown[] = [];
    zero!.failureHandler = (error) => failures.push(error);
    const started = Date.now();
    const error = await received(zero!, 1, 3n, 1, 4_000).then(
      () => null,
      (failure: unknown) => failure,
    );
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/cannot reach direct peer rank 1 rail 0 at 127\.0\.0\.1:\d+/);
    expect(failures).toEqual([error]);
    expect(zero!.failed).toBe(true);
  });

  it("a peer that ended after taking this rank's message, its dial of the pair still under way, fails nothing; the pair's next need fails naming it", async () => {
    // Rank 1's listener as a rank that finished meanwhile: it holds rank 0's dial, then resets it.
    const held: Socket[] = [];
    const holding = createServer((socket) => void held.push(socket));
    const port = await new Promise<number>((resolve) => holding.listen(0, '127.0.0.1', () => resolve((holding.address() as { port: number }).port)));
    try {
      const [zero, one, two] = await onDemandMeshes(3, { dialledAt: new Map([[1, { host: '127.0.0.1', port }]]) });
      const failures: unknown[] = [];
      zero!.failureHandler = (error) => failures.push(error);
      // Rank 0's send dials rank 1 (the link rank 0 receives on); rank 1's receive dials rank 0
      // (the link the send goes on), so the message arrives while rank 0's dial hangs.
      const sending = sent(zero!, 1, 6n, Uint8Array.of(6));
      expect(Array.from((await received(one!, 0, 6n, 1)).payload)).toEqual([6]);
      await sending;
      expect(held.length).toBe(1);
      await new Promise<void>((resolve) => {
        held[0]!.once('close', () => resolve());
        held[0]!.resetAndDestroy();
      });
      // The reset reaches rank 0's dial at once on loopback; give its handling time on a loaded machine.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect([zero!.failed, failures]).toEqual([false, []]);
      const [, fromZero] = await Promise.all([sent(zero!, 2, 7n, Uint8Array.of(7)), received(two!, 0, 7n, 1)]);
      expect(Array.from(fromZero.payload)).toEqual([7]);
      // The pair's next need meets the dial's failure: the receive fails, naming rank 1, and so does the mesh.
      const error = await received(zero!, 1, 8n, 1).then(
        () => null,
        (failure: unknown) => failure as Error & { code?: string },
      );
      expect(error).toMatchObject({ code: 'REMOTE_ABORT', peer: 1 });
      expect(error!.message).toMatch(/^direct peer rank 1 left \(its rail 0 failed while rank 0 opened it: .*ECONNRESET\)$/);
      expect(failures).toEqual([error]);
    } finally {
      holding.close();
    }
  });
});
