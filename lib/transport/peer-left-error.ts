import { RemoteAbortError } from '../errors.js';

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
