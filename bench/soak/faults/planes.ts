import type { SessionOptions } from '../../../lib/session/session-options.js';
import type { CollectiveTransport } from '../../../lib/transport/transport-kind.js';

/**
 * The planes the soak runs its epochs on, by the names the collectives table gives them
 * (docs/architecture.md, "Choosing an algorithm"): the two data planes of tcp_peer, `native` (the
 * addon's C++ thread over data links of its own) and `js` (the event loop over the peer mesh),
 * and `coordinator`, tcp_host_staged, where every byte goes through the coordinator. Each loses a
 * rank differently: a data link, a mesh link, or only the coordinator's connections.
 */
export type Plane = 'native' | 'js' | 'coordinator';

export const PLANES: readonly Plane[] = ['native', 'js', 'coordinator'];

export function transportOf(plane: Plane): CollectiveTransport {
  return plane === 'coordinator' ? 'tcp_host_staged' : 'tcp_peer';
}

/** The session options that put a job on `plane`; `native` fails at set-up where the addon does not load. */
export function planeOptions(plane: Plane): Pick<SessionOptions, 'transport' | 'dataPlane'> {
  return plane === 'coordinator' ? { transport: 'tcp_host_staged' } : { transport: 'tcp_peer', dataPlane: plane };
}
