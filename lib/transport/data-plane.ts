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

/**
 * One session's engine in the addon: one collective at a time, its outcome to `done` on the JS
 * thread, before the call returns when it was over within a moment (a small one runs on the
 * calling thread first, for at most 1 ms), else later.
 */
export interface NativeDataPlane {
  /** `done()` once it is done, `done(outcome)` if it failed; the header is copied at once. */
  allReduce(pairwise: boolean, scatter: boolean, dtype: number, op: number, input: Uint8Array, output: Uint8Array, count: number, header: Uint8Array, timeoutMs: number, done: (outcome?: NativeOutcome) => void): void;
  /** One message each way with every peer: `sends[p]` to p, p's into `receives[p]` (a missing entry: header only), `sends[q]` relaying `receives[forwards[q]]`. */
  exchange(sends: readonly (Uint8Array | undefined)[], receives: readonly (Uint8Array | undefined)[], forwards: readonly number[], header: Uint8Array, timeoutMs: number, done: (outcome?: NativeOutcome) => void): void;
  /** Ends the running collective and every later one with "aborted". */
  wake(): void;
  /** Wakes, then waits for the engine's thread; the sockets stay open. */
  close(): void;
}

/** The addon's engine class (lib/kernels/addon.ts finds it): sockets as descriptors, -1 at the rank itself. */
export type DataPlaneEngine = new (rank: number, worldSize: number, sendFds: readonly number[], receiveFds: readonly number[]) => NativeDataPlane;

/** What every message of a collective on the plane carries as its header, and how long it may wait. */
export interface PlaneCall {
  /** The collective and its mesh number: the header (docs/protocol.md 9.9). */
  readonly descriptor: OperationDescriptor;
  readonly sequence: bigint;
  readonly timeoutMs: number;
}

/** One all-reduce for the engine: element codes as on the wire. */
export interface NativeAllReduce extends PlaneCall {
  /** Reduce-scatter + all-gather between every pair (large tensors); else every rank sends all its data to all. */
  readonly pairwise: boolean;
  /**
   * A reduce-scatter (pairwise only, a count the world size divides): the pairwise schedule's
   * first step alone, `output` this rank's reduced segment (count / W elements; it may be that
   * segment of the input).
   */
  readonly scatter?: boolean;
  readonly elementType: number;
  readonly reduceOp: number;
  readonly input: Uint8Array;
  /** Exactly the result's size; may be the input itself (its own segment, for a reduce-scatter). */
  readonly output: Uint8Array;
  readonly count: number;
}

/**
 * One message each way between this rank and every peer (native/data_plane.h `ExchangeJob`): the
 * header then `sends[p]` to rank p, rank p's header then its payload straight into `receives[p]`.
 * A missing entry is a header-only message; the sizes are what both sides' descriptors imply.
 * Receives must not overlap each other or a send, unless the send forwards it.
 */
export interface NativeExchange extends PlaneCall {
  readonly sends: readonly (Uint8Array | undefined)[];
  readonly receives: readonly (Uint8Array | undefined)[];
  /**
   * By peer: `forwards[q] = f` makes `sends[q]` a relay of `receives[f]` (the same bytes), sent on
   * as far as they have arrived (a chain's middle rank); default none.
   */
  readonly forwards?: readonly number[];
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
    return this.run(job, (header, done) => this.engine.allReduce(job.pairwise, job.scatter === true, job.elementType, job.reduceOp, job.input, job.output, job.count, header, job.timeoutMs, done));
  }

  /** Cold: runs the exchange on subscribe, as `allReduce`. */
  exchange(job: NativeExchange): Observable<NativeOutcome | undefined> {
    return this.run(job, (header, done) => this.engine.exchange(job.sends, job.receives, job.forwards ?? [], header, job.timeoutMs, done));
  }

  /** Starts one engine call with `call`'s header encoded, and emits its outcome. */
  private run(call: PlaneCall, start: (header: Uint8Array, done: (outcome?: NativeOutcome) => void) => void): Observable<NativeOutcome | undefined> {
    return new Observable<NativeOutcome | undefined>((subscriber) => {
      encodeDescriptor(call.descriptor, call.sequence, this.header);
      // `done` may come before `start` returns: a small collective runs on this thread first.
      this.running = true;
      try {
        start(this.header, (outcome) => {
          this.running = false;
          if (this.closing) this.release();
          subscriber.next(outcome);
          subscriber.complete();
        });
      } catch (error) {
        // Arguments the engine cannot take: it did not start (the subscriber errors).
        this.running = false;
        throw error;
      }
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
