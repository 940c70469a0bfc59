/** Test-only access to a tcp_peer session's mesh links, to check which network each rail uses. */
import type { RankSession } from '../../lib/session/rank-session.js';
import type { PeerMesh } from '../../lib/transport/peer-mesh.js';

/**
 * The local address of the link this rank sends to `peer` on over `rail`: the peer dialled it to
 * this rank's listener for that rail, so it runs through that rail's address (reaches into the
 * session's private MeshLinks).
 */
export function meshLocalAddress(session: RankSession, peer: number, rail: number): string | undefined {
  const mesh = (session as unknown as { links: { mesh: PeerMesh } }).links.mesh;
  return mesh.link('outbound', peer, rail)?.socket.localAddress;
}
