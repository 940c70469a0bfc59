/**
 * Rank 1 of a 2-rank tcp_peer job played step by step from the test, so an attack can run while
 * rank 0's peer listener is open and before the real rank 1 dials it: join the coordinator (with
 * the job's secret), publish its own peer listener, read the table, join the control rail; then
 * dial rank 0 as the real peer when the test says so. Rank 0 dials rank 1's listener for the link
 * that carries rank 1's data to it: that one is accepted here, answering as the real rank 1.
 */
import { connect as netConnect } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { peerEndpointFrame, peerHelloHeader } from '../../lib/protocol/control-frames.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { frameText, makeHeader } from '../../lib/protocol/frame.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import type { UniqueId } from '../../lib/protocol/unique-id.js';
import { connectChannel } from '../../lib/transport/connect-channel.js';
import { FrameChannel, outgoing } from '../../lib/transport/frame-channel.js';
import { dialHandshake } from '../../lib/transport/handshake.js';
import { parseEndpointTable, type SocketAddressText } from '../../lib/transport/peer-endpoint-config.js';
import { acceptPeerDial } from '../helpers/peer-acceptor.js';

export interface ManualRankOne {
  /** Where rank 0 listens for its peers, as the coordinator's table says. */
  readonly rankZero: SocketAddressText;
  /** Dials rank 0 as the real rank 1 (authenticating with the secret, if any), completing rank 0's mesh. */
  dialRankZero(): Promise<FrameChannel>;
  /** Sends one i32 to rank 0 with tag 7, on the link rank 0 dialled. */
  sendValue(value: number): Promise<void>;
  /** Every channel opened, to destroy after the test. */
  readonly channels: FrameChannel[];
}

export async function manualRankOne(port: number, uniqueId: UniqueId, secret: Uint8Array | null): Promise<ManualRankOne> {
  const address = { host: '127.0.0.1', port };
  const origin = { uniqueId, rank: 1, worldSize: 2 };
  const channels: FrameChannel[] = [];
  const collective = await connectChannel(address, { ...origin, rail: null, timeoutMs: 20_000, secret });
  channels.push(collective);
  const fromRankZero = await acceptPeerDial(origin, 0, secret, channels);
  collective.send(outgoing(peerEndpointFrame(origin, 1, `127.0.0.1:${fromRankZero.port}`)));
  const table = parseEndpointTable(frameText(await firstValueFrom(collective.frames$)), 2, 1);
  channels.push(await connectChannel(address, { ...origin, rail: 0, timeoutMs: 20_000, secret }));
  // The coordinator's run starts at this rank: its own entry, then its successor's, rank 0 (docs/protocol.md 8.3).
  const rankZero = table[1]![0]!;
  return {
    rankZero,
    channels,
    async dialRankZero() {
      const socket = netConnect({ host: rankZero.host, port: rankZero.port });
      await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      const link = new FrameChannel(socket);
      channels.push(link);
      await dialHandshake(link, { secret, claim: { rank: 1, worldSize: 2, peer: 0, rail: 0 }, timeoutMs: 10_000, acceptor: 'rank 0' });
      link.send({ header: peerHelloHeader(origin, 0, 0), parts: [] });
      const reply = await firstValueFrom(link.frames$);
      if (reply.header.opcode !== Opcode.PeerHello) throw new Error(`rank 0 answered the real rank 1 with ${Opcode[reply.header.opcode]}: ${frameText(reply)}`);
      return link;
    },
    async sendValue(value) {
      const link = await fromRankZero.link;
      const payload = new Uint8Array(Int32Array.of(value).buffer);
      const header = makeHeader(
        { uniqueId, opcode: Opcode.Send, elementType: ElementType.I32, sourceRank: 1, destinationRank: 0, worldSize: 2, tag: 7n, elementCount: 1 },
        payload.length,
      );
      link.send({ header, parts: [payload] });
    },
  };
}

