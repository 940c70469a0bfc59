import { RemoteAbortError } from '../errors.js';

/**
 * A peer's link closed, or (links on demand) could not open because the peer is gone: the mesh
 * says so itself, not as the coordinator's abort.
 */
export class PeerLeftError extends RemoteAbortError {
  constructor(readonly peer: number) {
    const text = `direct peer rank ${peer} left`;
    super(text, text);
  }
}
