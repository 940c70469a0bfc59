/**
 * A rank and its coordinator agree on the transport (#49 item 8): the coordinator's Ready says
 * which it runs (docs/protocol.md 8.1, bytes 80..87); a rank that chose none takes it, a rank that
 * chose another fails at once naming both, instead of its requests meeting a coordinator of the
 * other transport (`opcode PeerEndpoint is not a coordinator collective request`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { makeHeader } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { RankSession } from '../../lib/session/rank-session.js';
import { resolveSessionOptions, type SessionOptions } from '../../lib/session/session-options.js';
import { agreedTransport, readyTransport, readyTransportField } from '../../lib/transport/ready-transport.js';
import { type CollectiveTransport, DEFAULT_TRANSPORT, resolveTransport } from '../../lib/transport/transport-kind.js';
import { readSettings } from '../../lib/settings/read-settings.js';
import { rejection } from '../helpers/job.js';
import { refusal } from '../helpers/refusal.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
});

async function coordinator(worldSize: number, transport: CollectiveTransport) {
  const uniqueId = UniqueId.random();
  const listening = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize, transport }, {});
  open.push(listening);
  const rank = async (rank: number, options: Partial<SessionOptions> = {}, env: Record<string, string> = {}) => {
    const session = await RankSession.open(
      resolveSessionOptions({ coordinator: `127.0.0.1:${listening.address.port}`, uniqueId, rank, worldSize, timeoutMs: 10_000, ...options }, env),
    );
    open.push(session);
    return session;
  };
  return { port: listening.address.port, rank };
}

describe('the transport, between a rank and its coordinator', () => {
  it('is in the Ready: 1 tcp_host_staged, 2 tcp_peer in bytes 80..87; 0 (an older coordinator) says nothing', () => {
    const ready = (communicator: bigint) => makeHeader({ uniqueId: UniqueId.random(), opcode: Opcode.Ready, worldSize: 2, communicator }, 0);
    expect([readyTransportField('tcp_host_staged'), readyTransportField('tcp_peer')]).toEqual([1n, 2n]);
    expect([readyTransport(ready(1n)), readyTransport(ready(2n)), readyTransport(ready(0n)), readyTransport(ready(7n))]).toEqual(['tcp_host_staged', 'tcp_peer', null, null]);
  });

  it('is the rank\'s where it chose one or the coordinator does not say, else the coordinator\'s; a choice against it is named', () => {
    const unset = { transport: 'tcp_peer', chosenBy: null } as const;
    const chosen = { transport: 'tcp_peer', chosenBy: 'GX1_COLLECTIVE_TRANSPORT' } as const;
    expect(agreedTransport(1, unset, 'tcp_host_staged', '10.0.0.1:29500')).toBe('tcp_host_staged');
    expect(agreedTransport(1, unset, null, '10.0.0.1:29500')).toBe('tcp_peer');
    expect(agreedTransport(1, chosen, null, '10.0.0.1:29500')).toBe('tcp_peer');
    expect(agreedTransport(1, chosen, 'tcp_peer', '10.0.0.1:29500')).toBe('tcp_peer');
    expect(refusal(() => agreedTransport(1, chosen, 'tcp_host_staged', '10.0.0.1:29500'))).toBe(
      "rank 1 runs transport tcp_peer (GX1_COLLECTIVE_TRANSPORT), the coordinator at 10.0.0.1:29500 runs tcp_host_staged: give the ranks the coordinator's transport, or leave theirs unset (a rank that sets none takes the coordinator's)",
    );
  });

  it('is resolved once with what chose it: the option, else the variable where set, else the default chosen by nothing', () => {
    const staged = readSettings({ GX1_COLLECTIVE_TRANSPORT: 'coordinator' });
    const unset = readSettings({});
    const bad = readSettings({ GX1_COLLECTIVE_TRANSPORT: 'carrier-pigeon' });
    expect(resolveTransport('peer', staged.GX1_COLLECTIVE_TRANSPORT)).toEqual({ transport: 'tcp_peer', chosenBy: 'transport' });
    expect(resolveTransport(undefined, staged.GX1_COLLECTIVE_TRANSPORT)).toEqual({ transport: 'tcp_host_staged', chosenBy: 'GX1_COLLECTIVE_TRANSPORT' });
    expect(resolveTransport(undefined, unset.GX1_COLLECTIVE_TRANSPORT)).toEqual({ transport: DEFAULT_TRANSPORT, chosenBy: null });
    // The option stands in for a bad variable, which is then not read; without it the variable is refused.
    expect(resolveTransport('tcp_host_staged', bad.GX1_COLLECTIVE_TRANSPORT)).toEqual({ transport: 'tcp_host_staged', chosenBy: 'transport' });
    expect(refusal(() => resolveTransport(undefined, bad.GX1_COLLECTIVE_TRANSPORT))).toBe('GX1_COLLECTIVE_TRANSPORT must be tcp_host_staged or tcp_peer, got "carrier-pigeon"');
    expect(refusal(() => resolveTransport('udp', unset.GX1_COLLECTIVE_TRANSPORT))).toBe('transport must be tcp_host_staged or tcp_peer, got "udp"');
    const resolved = resolveSessionOptions({ coordinator: '127.0.0.1:1', uniqueId: UniqueId.random(), rank: 0, worldSize: 1 }, staged);
    expect([resolved.transport, resolved.transportChosenBy]).toEqual(['tcp_host_staged', 'GX1_COLLECTIVE_TRANSPORT']);
  });

  it.each(['tcp_host_staged', 'tcp_peer'] as const)('a rank that sets none runs its %s coordinator\'s, and its collectives are right', async (transport) => {
    const job = await coordinator(2, transport);
    const ranks = await Promise.all([job.rank(0, { dataPlane: 'js' }), job.rank(1, { dataPlane: 'js' })]);
    expect(ranks.map((session) => session.transport)).toEqual([transport, transport]);
    const sums = await Promise.all(ranks.map((session) => session.allReduce(Int32Array.of(session.rank + 1))));
    expect(sums.map((sum) => [...sum])).toEqual([[3], [3]]);
    const sent = await Promise.all([ranks[0]!.send(1, 7, Int32Array.of(42), null), ranks[1]!.receive(0, 7, { dtype: 'i32', count: 1 }, null)]);
    expect([...(sent[1] as Int32Array)]).toEqual([42]);
  });

  it('a rank that chose another transport fails at once, naming both and where it chose', async () => {
    const staged = await coordinator(1, 'tcp_host_staged');
    const byOption = await rejection(staged.rank(0, { transport: 'tcp_peer' }));
    expect([byOption.code, byOption.message]).toEqual([
      'INVALID_CONFIGURATION',
      `rank 0 runs transport tcp_peer (transport), the coordinator at 127.0.0.1:${staged.port} runs tcp_host_staged: give the ranks the coordinator's transport, or leave theirs unset (a rank that sets none takes the coordinator's)`,
    ]);
    const peer = await coordinator(1, 'tcp_peer');
    const byVariable = await rejection(peer.rank(0, {}, { GX1_COLLECTIVE_TRANSPORT: 'tcp_host_staged' }));
    expect(byVariable.message).toMatch(/^rank 0 runs transport tcp_host_staged \(GX1_COLLECTIVE_TRANSPORT\), the coordinator at 127\.0\.0\.1:\d+ runs tcp_peer: /);
  });
});
