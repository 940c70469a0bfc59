import { RemoteAbortError } from '../errors.js';

/**
 * How long a rank whose peer closed a link waits before it blames that peer, on either data plane
 * (lib/collectives/schedule/plane-executor.ts, ./links/mesh-links.ts). The peer is most often a
 * survivor that failed first, on another rank's death: it aborted the job, naming the rank that
 * died, on its control channel and links just before it closed, but this rank saw the link close
 * before it read that Abort (read by the event loop while the engine's thread saw the close, or
 * relayed by the coordinator where the peer's own Abort stayed queued behind its data when its
 * process exited).
 */
export const PEER_LEFT_GRACE_MS = 100;

/**
 * A peer's link closed, or (links on demand) could not open because the peer is gone: the mesh
 * says so itself, not as the coordinator's abort. `how`, where given, says what showed it (a link
 * reset while it opened).
 */
export class PeerLeftError extends RemoteAbortError {
  constructor(
    readonly peer: number,
    how?: string,
    options?: { cause?: unknown },
  ) {
    const text = `direct peer rank ${peer} left${how === undefined ? '' : ` (${how})`}`;
    super(text, text, options);
  }
}
