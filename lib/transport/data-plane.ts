import type { Socket } from 'node:net';
import { catchError, from, Observable, of, switchMap } from 'rxjs';
import { ConfigurationError } from '../errors.js';
import type { OperationDescriptor } from '../protocol/agreement.js';
import { DESCRIPTOR_BYTES, encodeDescriptor } from '../protocol/descriptor-codec.js';
import { fnv1a64 } from '../protocol/fnv1a.js';
import type { UniqueId } from '../protocol/unique-id.js';
import { PeerLeftError } from './peer-left-error.js';

/**
 * The sockets of the native data plane's links: `rails` per pair of ranks each way, peer p's on
 * rail r at p * rails + r (undefined at this rank).
 */
export interface DataLinkSockets {
  readonly rails: number;
  /** The links this rank's data goes to the peer on (the peer dialled them). */
  readonly send: (Socket | undefined)[];
  /** The links the peer's data comes on (this rank dialled them). */
  readonly receive: (Socket | undefined)[];
}

/** How a native data-plane collective ended (native/link_io.h `Outcome`). */
export interface NativeOutcome {
  readonly kind: 'done' | 'aborted' | 'timed-out' | 'mismatch' | 'peer-closed' | 'system';
  /** The peer whose link it was (mismatch, peer-closed, system), else -1. */
  readonly peer: number;
  /** mismatch: the link's rail, and the label of the message this rank expected on it (docs/protocol.md 9.9). */
  readonly rail: number;
  readonly label: number;
  /** errno of a system failure or a reset, else 0. */
  readonly error: number;
  readonly what: string;
  /** timed-out: the peers whose data had not all come (else those not taking this rank's). */
  readonly missing: number[];
  /** mismatch: the 32-byte header the peer sent. */
  readonly header: Uint8Array;
}

/**
 * One session's engine in the addon (native/data_plane_entry.cc): the schedules it was given, and
 * one collective at a time, its outcome to `done` on the JS thread, before the call returns when it
 * was over within a moment (a small one runs on the calling thread first, for at most its inline
 * budget, `DataPlaneSettings.inline`), else later.
 */
export interface NativeDataPlane {
  /** Decodes and keeps a schedule (`encodeProgram` in lib/collectives/schedule/plane-executor.ts); returns its id. */
  compile(program: Float64Array): number;
  /** Forgets a compiled schedule. */
  release(program: number): void;
  /**
   * Adds link `link` (p * rails + rail), not open yet, both ways (links on demand); between
   * collectives. Absent from an addon built before links on demand.
   */
  open?(link: number, sendFd: number, receiveFd: number): void;
  /** The links (p * rails + rail) compiled schedule `program` moves messages on. Absent from an addon built before links on demand. */
  programLinks?(program: number): number[];
  /** Runs compiled schedule `program` over `input` and `output`; `done()` once it is done, `done(outcome)` if it failed; the header is copied at once. */
  run(program: number, input: Uint8Array, output: Uint8Array, header: Uint8Array, timeoutMs: number, done: (outcome?: NativeOutcome) => void): void;
  /** Ends the running collective and every later one with "aborted". */
  wake(): void;
  /** Wakes, then waits for the engine's thread; the sockets stay open. */
  close(): void;
  /** The links (p * rails + rail) agreed to single copy so far, sending and receiving; between collectives. */
  singleCopyLinks(): SingleCopyLinks;
  /** The links agreed to a shared-memory ring so far, and per link why it did not agree; between collectives. Absent from an addon built before it. */
  sharedMemoryLinks?(): SharedMemoryLinks;
  /** The peers the collective on the engine's thread waits for and that moved none of its bytes in the last second, as that thread said; none while none waits there. */
  waitingFor(): number[];
  /** How many times the engine's waits looked at its descriptors (poll()) so far: a collective whose messages cross rings it finds ready makes none. Absent from an addon built before it. */
  polls?(): number;
}

/**
 * Opens a pair's data links of one rail when a schedule first needs them (links on demand,
 * `PeerMesh.openDataLink`): resolves once both are in the plane's `DataLinkSockets`.
 */
export type DataLinkOpener = (peer: number, rail: number, timeoutMs: number) => Promise<void>;

/** Links of the native data plane agreed to single copy (native/single_copy.h), as p * rails + rail (the engine's answer). */
export interface SingleCopyLinks {
  /** Links whose receiver reads this rank's large payloads from its memory. */
  readonly sends: number[];
  /** Links whose sender's large payloads this rank reads from the sender's memory. */
  readonly receives: number[];
}

/** Links of the native data plane agreed to a shared-memory ring (native/shared_memory_links.h), as p * rails + rail (the engine's answer). */
export interface SharedMemoryLinks {
  /** Links whose receiver mapped this rank's ring: every header goes by it, and every payload single copy does not carry (8 KiB a slot). */
  readonly sends: number[];
  /** Links whose sender's ring this rank mapped. */
  readonly receives: number[];
  /** Per link, why it did not agree to a ring ('' where it did or none was offered): a ring this rank could not create, or one it could not map. */
  readonly refusals: string[];
}

/** The peers a rank's plane shares a ring with, on a link of any rail, and why a peer's ring was refused. */
export interface SharedMemoryPeers {
  /** Peers that read this rank's messages from its ring. */
  readonly writesTo: number[];
  /** Peers whose ring this rank reads. */
  readonly readsFrom: number[];
  /** Peers (ascending) whose link kept TCP, each with the first reason its links gave. */
  readonly refused: { readonly peer: number; readonly reason: string }[];
}

/** The peers a rank's plane has agreed single copy with, on a link of any rail. */
export interface SingleCopyPeers {
  /** Peers that read this rank's large payloads from its memory. */
  readonly readBy: number[];
  /** Peers whose large payloads this rank reads from their memory. */
  readonly readsFrom: number[];
}

/**
 * The addon's engine class (lib/kernels/addon.ts finds it): sockets as descriptors (peer p's on
 * rail r at p * rails + r), -1 at the rank itself; `spinUs`, how long a wait spins before it
 * sleeps, -1 adaptive (native/spin_budget.h); `sameHost`, the peers on this rank's host, whose
 * links start with the single-copy agreement (none if left out; every rank must name the same
 * pairs); `singleCopy`, whether this rank offers and reads memory on them (true if left out);
 * `sharedMemory`, whether it offers and maps shared-memory rings on them (true if left out);
 * `inlineUs`, how long a small collective may run on the calling thread (1000 if left out, 0 never).
 */
export type DataPlaneEngine = new (
  rank: number,
  worldSize: number,
  rails: number,
  sendFds: readonly number[],
  receiveFds: readonly number[],
  spinUs: number,
  sameHost?: readonly number[],
  singleCopy?: boolean,
  owner?: number,
  sharedMemory?: boolean,
  inlineUs?: number,
) => NativeDataPlane;

/** What an `inline` of `auto` is: 1 ms on the calling thread, then the engine's thread (native/data_plane_entry.cc). */
export const DEFAULT_INLINE_MICROS = 1_000;

/** How a rank's plane waits, and which of its links may agree to single copy. */
export interface DataPlaneSettings {
  /** How long a wait spins before it sleeps (us), or adaptive. */
  readonly spin?: number | 'auto';
  /**
   * How long a small collective (64 KiB or less) runs on the calling thread before the engine's
   * thread takes it (us; `auto`, `DEFAULT_INLINE_MICROS`): done within it, it completes before the
   * call returns, without a thread hand-off, but the event loop is held meanwhile. 0 never.
   */
  readonly inline?: number | 'auto';
  /** The peers on this rank's host (the same pairs on every rank: from the endpoint table). */
  readonly sameHost?: readonly number[];
  /** Whether this rank offers and reads memory on those links. */
  readonly singleCopy?: boolean;
  /** Whether this rank offers and maps shared-memory rings on those links (native/shared_memory_links.h). */
  readonly sharedMemory?: boolean;
  /**
   * The job rank the plane serves (`planeOwner`): its world's and its communicators' planes share
   * one. A process whose planes all serve one runs small collectives inline, on the calling thread;
   * where ranks share a process they may not (the peer waited for runs on that thread). Default: a
   * plane of its own.
   */
  readonly owner?: number;
}

/** The owner of a job rank's planes (`DataPlaneSettings.owner`): a number from the job's unique id and the rank. */
export function planeOwner(uniqueId: UniqueId, jobRank: number): number {
  return Number(fnv1a64(uniqueId.bytes) >> 12n) + jobRank;
}

/** What every message of a collective on the plane carries as its header, and how long it may wait. */
export interface PlaneCall {
  /** The collective and its mesh number: the header (docs/protocol.md 9.9). */
  readonly descriptor: OperationDescriptor;
  readonly sequence: bigint;
  readonly timeoutMs: number;
}

/**
 * A collective's header on the data links (docs/protocol.md 9.9): its descriptor, with the mesh
 * number's low 32 bits in bytes 24..27; bytes 28..31 are each message's label, 0 here (the engine
 * writes each send's own).
 */
export function encodeLinkHeader(call: Pick<PlaneCall, 'descriptor' | 'sequence'>, into: Uint8Array): Uint8Array {
  encodeDescriptor(call.descriptor, linkSequence(call.sequence), into);
  return into;
}

/** The mesh number as a data link header carries it: modulo 2^32 (both ends count alike). */
export function linkSequence(sequence: bigint): bigint {
  return sequence & 0xffff_ffffn;
}

/** Compiled schedules a plane keeps: a collective's shapes repeat, so each is compiled once. */
export const PLANE_PROGRAMS = 64;

/**
 * The native data plane of a tcp_peer session (docs/architecture.md, "The native data plane"): a
 * C++ thread that runs collective schedules over the session's data links (the sockets `PeerMesh`
 * opened for it and stopped reading), one collective at a time, without the event loop in between
 * its messages. Nothing here knows what a collective means: lib/collectives/schedule/plane-executor.ts
 * compiles the schedules and turns a `NativeOutcome` into the session's errors.
 *
 * `end()` (the session failed, aborted or is closing) stops a running collective at once and every
 * later one; `close()` also closes the data links, once the engine let go of them.
 */
export class DataPlane {
  private running = false;
  private closing = false;
  /** Where each collective's header is encoded: the engine copies it, so one serves every call. */
  private readonly header = new Uint8Array(DESCRIPTOR_BYTES);
  /** The descriptor `header` holds: a call of the same shape (the same object) writes only its sequence. */
  private encoded: OperationDescriptor | null = null;
  private readonly headerView = new DataView(this.header.buffer);
  /** Compiled schedules by the caller's key, oldest first. */
  private readonly programs = new Map<string, number>();
  /** Links on demand: the links each compiled schedule needs that the engine did not have yet, by id. */
  private readonly unopened = new Map<number, number[]>();
  /** Links on demand: by link, whether the engine has it. */
  private readonly opened: boolean[];

  private constructor(
    private readonly engine: NativeDataPlane,
    private readonly rank: number,
    private readonly links: DataLinkSockets,
    private readonly opener: DataLinkOpener | null,
  ) {
    this.opened = links.send.map((socket) => socket !== undefined);
  }

  private get rails(): number {
    return this.links.rails;
  }

  /**
   * `Engine` (the addon's) over `links`, every peer's send and receive sockets, as `settings` say.
   * With `opener` (links on demand), `links` may lack any peer's: a schedule's first run opens the
   * links it needs with `opener` (which fills them in), then gives them to the engine.
   */
  static open(Engine: DataPlaneEngine, rank: number, worldSize: number, links: DataLinkSockets, settings: DataPlaneSettings = {}, opener: DataLinkOpener | null = null): DataPlane {
    const { spin = 'auto', inline = 'auto', sameHost = [], singleCopy = true, sharedMemory = true, owner } = settings;
    const { rails } = links;
    const descriptor = (socket: Socket | undefined, link: number) => {
      const peer = Math.floor(link / rails);
      if (peer === rank) return -1;
      if (socket === undefined && opener !== null) return -1;
      return descriptorOf(socket, rank, peer, rails, link);
    };
    const send = links.send.map(descriptor);
    const receive = links.receive.map(descriptor);
    const engine = new Engine(rank, worldSize, rails, send, receive, spin === 'auto' ? -1 : spin, sameHost, singleCopy, owner, sharedMemory, inline === 'auto' ? DEFAULT_INLINE_MICROS : inline);
    if (opener !== null && (engine.open === undefined || engine.programLinks === undefined)) {
      engine.close();
      throw new ConfigurationError('the native addon predates links on demand (no open/programLinks): rebuild it (npm rebuild rxccl)');
    }
    return new DataPlane(engine, rank, links, opener);
  }

  /**
   * The compiled schedule known as `key`, compiled from `encode()` the first time (the oldest of
   * more than PLANE_PROGRAMS is forgotten).
   */
  program(key: string, encode: () => Float64Array): number {
    const known = this.programs.get(key);
    if (known !== undefined) return known;
    const program = this.engine.compile(encode());
    this.programs.set(key, program);
    if (this.opener !== null) this.unopened.set(program, this.engine.programLinks!(program));
    if (this.programs.size > PLANE_PROGRAMS) {
      const [oldestKey, oldest] = this.programs.entries().next().value as [string, number];
      this.programs.delete(oldestKey);
      this.unopened.delete(oldest);
      this.engine.release(oldest);
    }
    return program;
  }

  /** The peers agreed to single copy so far (native/single_copy.h), ascending; null while a collective runs. */
  singleCopyPeers(): SingleCopyPeers | null {
    if (this.running || this.closing) return null;
    const { sends, receives } = this.engine.singleCopyLinks();
    const peers = (links: number[]) => [...new Set(links.map((link) => Math.floor(link / this.rails)))];
    return { readBy: peers(sends), readsFrom: peers(receives) };
  }

  /** The peers sharing a shared-memory ring with this rank so far (native/shared_memory_links.h), ascending; null while a collective runs or where the addon cannot say. */
  sharedMemoryPeers(): SharedMemoryPeers | null {
    if (this.running || this.closing || this.engine.sharedMemoryLinks === undefined) return null;
    const { sends, receives, refusals } = this.engine.sharedMemoryLinks();
    const peers = (links: number[]) => [...new Set(links.map((link) => Math.floor(link / this.rails)))];
    const refused = new Map<number, string>();
    refusals.forEach((reason, link) => {
      const peer = Math.floor(link / this.rails);
      if (reason !== '' && !refused.has(peer)) refused.set(peer, reason);
    });
    return { writesTo: peers(sends), readsFrom: peers(receives), refused: [...refused].map(([peer, reason]) => ({ peer, reason })) };
  }

  /** The peers the running collective waits for in silence (its engine's thread says so every second: not those still moving bytes), none while none waits. */
  waitingFor(): number[] {
    return this.running && !this.closing ? this.engine.waitingFor() : [];
  }

  /** How many times the engine's waits made a poll() system call so far (diagnostics, tests); null where the addon cannot say. */
  polls(): number | null {
    return this.engine.polls?.() ?? null;
  }

  /** Forgets every compiled schedule (the schedules' inputs changed: a new ring order). */
  forgetPrograms(): void {
    for (const program of this.programs.values()) this.engine.release(program);
    this.programs.clear();
    this.unopened.clear();
  }

  /**
   * Cold: runs compiled schedule `program` on subscribe and emits how it ended: undefined when it
   * is done, else the engine's outcome. The buffers must stay untouched until then; a subscriber
   * that leaves early (the session failed: `end()` follows) gets nothing.
   */
  run(program: number, input: Uint8Array, output: Uint8Array, call: PlaneCall): Observable<NativeOutcome | undefined> {
    const unopened = this.unopened.get(program);
    if (unopened !== undefined && !this.openNow(unopened)) {
      // Links on demand: the schedule's first run waits for its links (a later run finds them open).
      // A peer whose link cannot open (a fault-tolerant job's lost rank) ends it as one whose link closed.
      return from(this.openLinks(unopened, call.timeoutMs)).pipe(
        switchMap(() => this.run(program, input, output, call)),
        catchError((error: unknown) => {
          if (!(error instanceof PeerLeftError)) throw error;
          return of(peerClosed(error));
        }),
      );
    }
    return new Observable<NativeOutcome | undefined>((subscriber) => {
      if (call.descriptor === this.encoded) {
        // Bytes 24..31: the mesh number's low 32 bits, then the label, 0 (encodeLinkHeader).
        this.headerView.setBigUint64(DESCRIPTOR_BYTES - 8, linkSequence(call.sequence), true);
      } else {
        encodeLinkHeader(call, this.header);
        this.encoded = call.descriptor;
      }
      // `done` may come before `run` returns: a small collective runs on this thread first.
      this.running = true;
      try {
        this.engine.run(program, input, output, this.header, call.timeoutMs, (outcome) => {
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

  /**
   * Gives the engine those of `links` both of whose sockets are here, and forgets them in
   * `links`; true once none is left. Only between collectives (the engine takes links only then):
   * `run` is, as a plane runs one collective at a time.
   */
  private openNow(links: number[]): boolean {
    for (let index = links.length - 1; index >= 0; index--) {
      const link = links[index]!;
      if (!this.opened[link]) {
        const send = this.links.send[link];
        const receive = this.links.receive[link];
        if (send === undefined || receive === undefined) continue;
        const peer = Math.floor(link / this.rails);
        this.engine.open!(link, descriptorOf(send, this.rank, peer, this.rails, link), descriptorOf(receive, this.rank, peer, this.rails, link));
        this.opened[link] = true;
      }
      links.splice(index, 1);
    }
    return links.length === 0;
  }

  /** Opens `links` with the opener, all at once (a peer's dial fails the job, naming it). */
  private async openLinks(links: readonly number[], timeoutMs: number): Promise<void> {
    const opener = this.opener!;
    await Promise.all(links.map((link) => opener(Math.floor(link / this.rails), link % this.rails, timeoutMs)));
  }

  private release(): void {
    this.engine.close();
    for (const socket of [...this.links.send, ...this.links.receive]) socket?.destroy();
  }
}

/** A data link socket's descriptor (the engine reads and writes it); a socket without one cannot be a link. */
function descriptorOf(socket: Socket | undefined, rank: number, peer: number, rails: number, link: number): number {
  const fd = (socket as unknown as { _handle: { fd?: number } | null } | undefined)?._handle?.fd;
  if (fd === undefined || fd < 0) throw new ConfigurationError(`rank ${rank} has no data link socket for rank ${peer}${rails === 1 ? '' : ` rail ${link % rails}`}`);
  return fd;
}

/** How a collective ends whose peer's link could not open because the peer is gone: as if it had closed. */
function peerClosed(error: PeerLeftError): NativeOutcome {
  return { kind: 'peer-closed', peer: error.peer, rail: 0, label: 0, error: 0, what: 'its link could not open', missing: [], header: new Uint8Array(0) };
}
