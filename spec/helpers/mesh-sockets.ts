/** Test-only access to a tcp_peer session's mesh links, to check which network each rail uses. */
import type { RankSession } from '../../lib/session/rank-session.js';
import type { FrameChannel } from '../../lib/transport/frame-channel.js';

/**
 * The local address of the link this rank sends to `peer` on over `rail`: the peer dialled it to
 * this rank's listener for that rail, so it runs through that rail's address (reaches into the
 * session's private MeshLinks).
 */
export function meshLocalAddress(session: RankSession, peer: number, rail: number): string | undefined {
  const links = (session as unknown as { links: { mesh: { outbound: Map<string, FrameChannel> } } }).links.mesh.outbound;
  return links.get(`${peer}/${rail}`)?.socket.localAddress;
}
