import type { Observable } from 'rxjs';
import type { ElementType } from '../../protocol/element-type.js';

/** What a message carries, as its header declares it. */
export interface MessageShape {
  readonly elementType: ElementType;
  readonly count: number;
}

/** A message waiting for its receive, as a probe reports it (it stays waiting). */
export interface MessageEnvelope extends MessageShape {
  /** The rank that sent it. */
  readonly source: number;
  /** Its payload's size. */
  readonly bytes: number;
}

/** What a receive expects: a message of another shape is an error naming both. */
export interface ExpectedShape {
  readonly elementType: ElementType;
  /**
   * null takes a message of any count (the coordinator's router too: a Receive request of
   * `ANY_COUNT`). Collectives whose ranks may disagree on the size receive that way, so they can
   * name the disagreement instead of failing on the shape; so does `receiveObject`.
   */
  readonly count: number | null;
}

/**
 * Tagged bytes between ranks: the one interface every algorithm, the topology probe and
 * point-to-point messaging move data through. Two transports implement it: the coordinator's rails
 * (tcp_host_staged, `StagedLinks`) and the direct peer mesh (tcp_peer, `MeshLinks`).
 *
 * Both operations are cold: nothing happens until subscribed, and each subscription is one
 * message. Messages between two ranks with the same tag arrive in order (FIFO per source and tag).
 * Every operation ends with the session's failure (abort, a peer lost, a timeout) if that comes
 * first.
 */
export interface Links {
  readonly rank: number;
  readonly worldSize: number;
  /** Parallel connections between every pair of ranks, 1..64. */
  readonly rails: number;
  /**
   * Sends `bytes` to `peer` (itself too) on `rail` under `tag` (a message key: the tag, with a
   * communicator's id above its 64 bits, lib/protocol/message-key.ts); completes once the transport took
   * them (the coordinator acknowledged, or the socket accepted them without pushing back). The
   * bytes must stay untouched until then.
   */
  send(rail: number, peer: number, tag: bigint, bytes: Uint8Array, shape: MessageShape): Observable<void>;
  /**
   * Emits the payload of the next message from `peer` (ANY_RANK for any) on `rail` with `tag`,
   * then completes; a message of another shape is an error naming both shapes. Unsubscribing
   * before it arrives withdraws the receive where the transport can (the mesh can; a receive the
   * coordinator already holds cannot be recalled).
   *
   * `into` (a receive from one rank, of exactly its payload's size) is where the transport may
   * write the payload as it arrives (the mesh reads the socket straight into it): the emitted
   * payload is then `into` itself, else other memory the caller copies from. Until the receive
   * ends, `into` may be written.
   *
   * `waitMs` is how long the mesh waits for the message before the receive fails the job (default
   * the session timeout): a caller that times the wait itself, and names what is missing when it
   * ends (a mesh collective, a communicator's leader), passes a longer one so that its own
   * deadline speaks first.
   */
  receive(rail: number, peer: number, tag: bigint, shape: ExpectedShape, into?: Uint8Array, waitMs?: number): Observable<Uint8Array>;
  /** Takes back a received payload's memory once its consumer is done with it (never required). */
  release(bytes: Uint8Array): void;
}

/** The links a session owns: data movement plus the job-wide signals that travel beside it. */
export interface SessionLinks extends Links {
  /** A heartbeat round trip through the coordinator; errors after `timeoutMs`. */
  heartbeat(timeoutMs: number): Observable<void>;
  /** Tells every rank to abandon the job with `message`; returns how many channels carried it. */
  abort(message: string): number;
  /** Says goodbye and closes every connection. */
  close(): void;
  /**
   * Drops what waits here, and what comes later, of a communicator that failed (a fault-tolerant
   * job's; the mesh, where messages wait at the receiver). Optional: without it they wait unread.
   */
  forget?(communicator: bigint): void;
  /**
   * The oldest message from `peer` (ANY_RANK for any) on `rail` with `tag` that waits here for a
   * receive, left waiting; null if none does. Optional, as `forget`: only where messages wait at
   * the receiver (the mesh); the coordinator holds a staged job's.
   */
  waiting?(rail: number, peer: number, tag: bigint): MessageEnvelope | null;
  /**
   * Emits the envelope of that message once one waits (at once if one does), then completes;
   * nothing is taken. After `waitMs` (default the session timeout) it errors with a timeout, which
   * fails nothing else: no message was touched. Where `waiting` is, this is too.
   */
  probe?(rail: number, peer: number, tag: bigint, waitMs?: number): Observable<MessageEnvelope>;
}
