/**
 * What a rank's peer listener says to connections that are not its peers, and how a corrupt
 * direct link is reported: a fake rank 1 plays its side of a 2-rank tcp_peer job against a real
 * rank 0.
 */
import { connect as netConnect } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { outgoing } from '../../lib/transport/frame-channel.js';
import { peerEndpointFrame, peerHelloHeader } from '../../lib/protocol/control-frames.js';
import { frameText } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import { connectChannel } from '../../lib/transport/connect-channel.js';
import { FrameChannel } from '../../lib/transport/frame-channel.js';
import { parseEndpointTable } from '../../lib/transport/peer-endpoint-config.js';
import { rejection, startCoordinator, type TestJob } from '../helpers/job.js';
import { acceptPeerDial } from '../helpers/peer-acceptor.js';

const jobs: TestJob[] = [];
const raw: FrameChannel[] = [];
afterEach(async () => {
  for (const channel of raw.splice(0)) channel.destroy();
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

/** Joins as rank 1, publishes an endpoint, and returns rank 0's peer listener and a dialer to it. */
async function fakeRankOne(job: TestJob) {
  const address = { host: '127.0.0.1', port: job.coordinator.address.port };
  const origin = { uniqueId: job.uniqueId, rank: 1, worldSize: 2 };
  const collective = await connectChannel(address, { ...origin, rail: null, timeoutMs: 3_000 });
  raw.push(collective);
  // Rank 0 dials this listener for the link that would carry rank 1's data.
  const fromRankZero = await acceptPeerDial(origin, 0, null, raw);
  collective.send(outgoing(peerEndpointFrame(origin, 1, `127.0.0.1:${fromRankZero.port}`)));
  const table = parseEndpointTable(frameText(await firstValueFrom(collective.frames$)), 2, 1);
  raw.push(await connectChannel(address, { ...origin, rail: 0, timeoutMs: 3_000 }));
  // The coordinator's run starts at this rank: its own entry, then its successor's, rank 0 (docs/protocol.md 8.3).
  const endpoint = table[1]![0]!;
  const dial = async () => {
    const socket = netConnect({ host: endpoint.host, port: endpoint.port });
    await new Promise((resolve) => socket.once('connect', resolve));
    const channel = new FrameChannel(socket);
    raw.push(channel);
    return channel;
  };
  return { origin, dial };
}

describe('a peer listener and its strangers', () => {
  it('refuses a PeerHello for a rail the job does not have, saying so, without revealing the unique id', async () => {
    const job = await startCoordinator(2, { transport: 'tcp_peer', timeoutMs: 3_000 });
    jobs.push(job);
    // Rank 1 is played by hand, without the native data plane's links.
    const opening = job.openRank(0, { dataPlane: 'js' });
    const fake = await fakeRankOne(job);
    const stranger = await fake.dial();
    stranger.send({ header: peerHelloHeader(fake.origin, 0, 3), parts: [] });
    const refusal = await firstValueFrom(stranger.frames$);
    expect(refusal.header.opcode).toBe(Opcode.Abort);
    expect(frameText(refusal)).toBe('direct peer connection refused by rank 0: direct peer link is for rail 3, but this job has 1 rail (0..0)');
    expect(refusal.header.uniqueId.toHex()).toBe('0'.repeat(32));
    // The real hello still gets through, and the job goes on.
    const link = await fake.dial();
    link.send({ header: peerHelloHeader(fake.origin, 0, 0), parts: [] });
    expect((await firstValueFrom(link.frames$)).header.opcode).toBe(Opcode.PeerHello);
    const zero = await opening;
    // A corrupt frame on the link fails rank 0 with the cause, not as a departure.
    const pending = rejection(zero.receive(1, 1, { dtype: 'u8', count: 1 }));
    link.socket.write(Buffer.from('GET / HTTP/1.1\r\n\r\n'.padEnd(96, ' ')));
    const error = await pending;
    expect(error.message).toContain('direct peer rank 1 sent a corrupt frame:');
    expect(error.message).not.toContain('left');
  });
});
