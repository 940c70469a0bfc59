/**
 * A hand-played rank's peer listener: accepts the one link a real rank dials to it (the link that
 * carries the hand-played rank's data to the real one), authenticates it and answers its PeerHello.
 */
import { createServer, type Socket } from 'node:net';
import { asyncScheduler } from 'rxjs';
import { peerHelloHeader } from '../../lib/protocol/control-frames.js';
import type { UniqueId } from '../../lib/protocol/unique-id.js';
import { FrameChannel } from '../../lib/transport/frame-channel.js';
import { acceptHandshake } from '../../lib/transport/handshake.js';

export async function acceptPeerDial(
  origin: { uniqueId: UniqueId; rank: number; worldSize: number },
  peer: number,
  secret: Uint8Array | null,
  channels: FrameChannel[],
): Promise<{ port: number; link: Promise<FrameChannel> }> {
  let accepted: (socket: Socket) => void = () => undefined;
  const socket = new Promise<Socket>((resolve) => (accepted = resolve));
  const server = createServer({ noDelay: true }, (connection) => {
    server.close();
    accepted(connection);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const link = (async () => {
    const channel = new FrameChannel(await socket);
    channels.push(channel);
    await acceptHandshake(channel, { secret, timeoutMs: 20_000, scheduler: asyncScheduler, openingRule: () => undefined });
    channel.send({ header: peerHelloHeader(origin, peer, 0), parts: [] });
    return channel;
  })();
  link.catch(() => undefined);
  return { port: (server.address() as { port: number }).port, link };
}
