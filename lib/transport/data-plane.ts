import type { Socket } from 'node:net';
import { Observable } from 'rxjs';
import { ConfigurationError } from '../errors.js';
import type { OperationDescriptor } from '../protocol/agreement.js';
import { DESCRIPTOR_BYTES, encodeDescriptor } from '../protocol/descriptor-codec.js';

/** The sockets of the native data plane's links, by peer rank (undefined at this rank). */
export interface DataLinkSockets {
  /** The link this rank's data goes to the peer on (the peer dialled it). */
  readonly send: (Socket | undefined)[];
  /** The link the peer's data comes on (this rank dialled it). */
  readonly receive: (Socket | undefined)[];
}

/** How a native data-plane collective ended (native/data_plane.h `Outcome`). */
export interface NativeOutcome {
  readonly kind: 'done' | 'aborted' | 'timed-out' | 'mismatch' | 'peer-closed' | 'system';
  /** The peer whose link it was (mismatch, peer-closed, system), else -1. */
  readonly peer: number;
  /** errno of a system failure or a reset, else 0. */
  readonly error: number;
  readonly what: string;
  /** timed-out: the peers whose data had not all come (else those not taking this rank's). */
  readonly missing: number[];
  /** mismatch: the 32-byte header the peer sent. */
  readonly header: Uint8Array;
}

/** One session's engine in the addon: one collective at a time, its outcome to `done` on the JS thread. */
export interface NativeDataPlane {
  /** `done()` once it is done, `done(outcome)` if it failed; the header is copied at once. */
  allReduce(pairwise: boolean, dtype: number, op: number, input: Uint8Array, output: Uint8Array, count: number, header: Uint8Array, timeoutMs: number, done: (outcome?: NativeOutcome) => void): void;
  /** Ends the running collective and every later one with "aborted". */
  wake(): void;
  /** Wakes, then waits for the engine's thread; the sockets stay open. */
  close(): void;
}

/** The addon's engine class (lib/kernels/addon.ts finds it): sockets as descriptors, -1 at the rank itself. */
export type DataPlaneEngine = new (rank: number, worldSize: number, sendFds: readonly number[], receiveFds: readonly number[]) => NativeDataPlane;

/** One all-reduce for the engine: element codes as on the wire, and what every message's header says. */
export interface NativeAllReduce {
  /** Reduce-scatter + all-gather between every pair (large tensors); else every rank sends all its data to all. */
  readonly pairwise: boolean;
  readonly elementType: number;
  readonly reduceOp: number;
  readonly input: Uint8Array;
  /** Exactly the input's size; may be the input itself. */
  readonly output: Uint8Array;
  readonly count: number;
  /** The collective and its mesh number: the header (docs/protocol.md 9.9). */
  readonly descriptor: OperationDescriptor;
  readonly sequence: bigint;
  readonly timeoutMs: number;
}

/**
 * The native data plane of a tcp_peer session (docs/architecture.md, "The native data plane"): a
 * C++ thread that runs a collective's data phase over the session's data links (the sockets
 * `PeerMesh` opened for it and stopped reading), one collective at a time, without the event loop
 * in between its messages. Nothing here knows what a collective means: the algorithms
 * (lib/collectives/<collective>/native.ts) build the job and turn its `NativeOutcome` into the
 * session's errors.
 *
 * `end()` (the session failed, aborted or is closing) stops a running collective at once and every
 * later one; `close()` also closes the data links, once the engine let go of them.
 */
export class DataPlane {
  private running = false;
  private closing = false;
  /** Where each collective's header is encoded: the engine copies it, so one serves every call. */
  private readonly header = new Uint8Array(DESCRIPTOR_BYTES);

  private constructor(
    private readonly engine: NativeDataPlane,
    private readonly sockets: readonly Socket[],
  ) {}

  /** `Engine` (the addon's) over `links`, every peer's send and receive socket. */
  static open(Engine: DataPlaneEngine, rank: number, worldSize: number, links: DataLinkSockets): DataPlane {
    const descriptor = (socket: Socket | undefined, peer: number) => {
      if (peer === rank) return -1;
      const fd = (socket as unknown as { _handle: { fd?: number } | null } | undefined)?._handle?.fd;
      if (fd === undefined || fd < 0) throw new ConfigurationError(`rank ${rank} has no data link socket for rank ${peer}`);
      return fd;
    };
    const send = links.send.map(descriptor);
    const receive = links.receive.map(descriptor);
    const engine = new Engine(rank, worldSize, send, receive);
    return new DataPlane(engine, [...links.send, ...links.receive].filter((socket) => socket !== undefined));
  }

  /**
   * Cold: runs the all-reduce on subscribe and emits how it ended: undefined when it is done,
   * else the engine's outcome. The buffers must stay untouched until then; a subscriber that
   * leaves early (the session failed: `end()` follows) gets nothing.
   */
  allReduce(job: NativeAllReduce): Observable<NativeOutcome | undefined> {
    return new Observable<NativeOutcome | undefined>((subscriber) => {
      encodeDescriptor(job.descriptor, job.sequence, this.header);
      // Throws (the subscriber errors) on arguments the engine cannot take, before it starts.
      this.engine.allReduce(job.pairwise, job.elementType, job.reduceOp, job.input, job.output, job.count, this.header, job.timeoutMs, (outcome) => {
        this.running = false;
        if (this.closing) this.release();
        subscriber.next(outcome);
        subscriber.complete();
      });
      this.running = true;
    });
  }

  /** Ends a running collective (its outcome is "aborted") and every later one. */
  end(): void {
    this.engine.wake();
  }

  /** Ends, then closes the engine and the data links (after a running collective returned). */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    this.engine.wake();
    if (!this.running) this.release();
  }

  private release(): void {
    this.engine.close();
    for (const socket of this.sockets) socket.destroy();
  }
}
