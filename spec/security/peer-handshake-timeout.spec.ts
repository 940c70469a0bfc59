/**
 * A peer listener gives each incoming connection its own handshake timeout: a silent one is
 * refused when it runs out (told why, then closed); past the cap, a new connection evicts the
 * oldest. (That the real peer is linked while strangers wait: spec/security/peer-port.spec.ts.)
 */
import type { Socket } from 'node:net';
import { AsyncSink } from 'ix/asynciterable';
import { asyncScheduler } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { frameText } from '../../lib/protocol/frame.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { bindPeerListeners } from '../../lib/transport/peer-endpoint-config.js';
import { PeerMesh } from '../../lib/transport/peer-mesh.js';
import { rawConnection } from '../helpers/raw-socket.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('handshakes on a peer listener', () => {
  it('time out each on its own clock and are capped; then the real peer links', async () => {
    const uniqueId = UniqueId.random();
    const secret = new Uint8Array(32).fill(7);
    const incoming = new AsyncSink<{ rail: number | null; socket: Socket }>();
    const listeners = await bindPeerListeners({ listenAddresses: [{ host: '127.0.0.1', port: 0 }], advertiseAddresses: [] }, 1, (rail, socket) => incoming.write({ rail, socket }), null, 2);
    cleanups.push(() => listeners.servers.forEach((server) => server.close()));
    const endpoint = listeners.endpoints[0]!;
    // Rank 1's own listener: rank 0 dials it for the link rank 1 sends on.
    const incomingOfOne = new AsyncSink<{ rail: number | null; socket: Socket }>();
    const listenersOfOne = await bindPeerListeners({ listenAddresses: [{ host: '127.0.0.1', port: 0 }], advertiseAddresses: [] }, 1, (rail, socket) => incomingOfOne.write({ rail, socket }));
    cleanups.push(() => listenersOfOne.servers.forEach((server) => server.close()));
    const common = { endpoints: [[endpoint], [listenersOfOne.endpoints[0]!]], timeoutMs: 20_000, scheduler: asyncScheduler, secret };

    // Two silent strangers fill the cap of 2; a third evicts the oldest (admission.ts).
    const silent = [rawConnection(endpoint.port, 10_000), rawConnection(endpoint.port, 10_000)];
    await Promise.all(silent.map((connection) => connection.connected));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const zeroOpening = PeerMesh.connect({
      ...common,
      identity: { uniqueId, rank: 0, worldSize: 2, rails: 1 },
      incoming,
      handshakeTimeoutMs: 400,
      admission: listeners.admission,
    });
    const third = rawConnection(endpoint.port, 10_000);
    const evicted = await silent[0]!.outcome;
    expect(evicted.dropped).toBe(true);
    expect(evicted.frames.map(frameText)).not.toContain('direct peer connection refused by rank 0: direct peer handshake (400 ms) timed out');

    const started = Date.now();
    const outcomes = await Promise.all([silent[1]!, third].map((connection) => connection.outcome));
    expect(Date.now() - started).toBeLessThan(3_000);
    for (const outcome of outcomes) {
      expect(outcome.dropped).toBe(true);
      expect(outcome.frames.map(frameText).at(-1)).toBe('direct peer connection refused by rank 0: direct peer handshake (400 ms) timed out');
    }
    expect(listeners.admission.size).toBe(0);

    // With the strangers gone, the real peer is linked (the cap held only while they waited).
    const one = await PeerMesh.connect({ ...common, identity: { uniqueId, rank: 1, worldSize: 2, rails: 1 }, incoming: incomingOfOne });
    const zero = await zeroOpening;
    cleanups.push(() => {
      one.close();
      zero.close();
      incoming.end();
      incomingOfOne.end();
    });
    expect(zero.identity.rank).toBe(0);
  });
});
