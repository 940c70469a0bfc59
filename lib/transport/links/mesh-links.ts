import { Observable, type Subscriber } from 'rxjs';
import { failureText } from '../../errors.js';
import type { Frame } from '../../protocol/frame.js';
import type { FrameHeader } from '../../protocol/header.js';
import type { MessageOutcome, PeerMesh, Withdraw } from '../peer-mesh.js';
import { PEER_LEFT_GRACE_MS, PeerLeftError } from '../peer-left-error.js';
import type { SessionFailure } from '../session-failure.js';
import type { ExpectedShape, MessageEnvelope, MessageShape, SessionLinks } from './links.js';
import type { RailClient } from './rail-client.js';
import { heartbeatOn } from './staged-links.js';
import { tryEach } from './try-each.js';

/**
 * tcp_peer: data goes rank to rank over the direct mesh; the coordinator keeps one control channel
 * for heartbeats and aborts. As in the reference design, a failed send or receive aborts the job
 * on both planes, so no rank waits on a peer that will never answer; in a fault-tolerant job a peer
 * that left is a lost rank instead, reported by the coordinator, and the job goes on.
 */
export class MeshLinks implements SessionLinks {
  constructor(
    private readonly mesh: PeerMesh,
    private readonly control: RailClient,
    private readonly failure: SessionFailure,
    private readonly timeoutMs: () => number,
    /**
     * A fault-tolerant job's: a message that fails because its peer left aborts nothing, and is
     * reported here (something needed that peer: the job has lost it for this rank).
     */
    private readonly onPeerNeeded: ((peer: number) => void) | null = null,
  ) {
    // A failure the mesh finds on its own (a peer over its unmatched budget, a corrupt frame)
    // reaches every rank the way a failed send or receive does: on both planes.
    mesh.detectedFailureHandler = (error) => this.abort(failureText(error));
    // And a failure of the session (an abort on the control channel) fails the mesh, once the
    // session's operations ended with it: one handler for the session, none per message.
    failure.onceFailed((error) => mesh.fail(error));
  }

  get rank(): number {
    return this.mesh.identity.rank;
  }

  get worldSize(): number {
    return this.mesh.identity.worldSize;
  }

  get rails(): number {
    return this.mesh.identity.rails;
  }

  send(rail: number, peer: number, tag: bigint, bytes: Uint8Array, shape: MessageShape): Observable<void> {
    return new Observable<void>((subscriber) => this.guarded(subscriber, (outcome) => this.mesh.write(rail, peer, tag, shape, bytes, this.timeoutMs(), outcome), () => undefined));
  }

  receive(rail: number, peer: number, tag: bigint, shape: ExpectedShape, into?: Uint8Array, waitMs?: number): Observable<Uint8Array> {
    return new Observable<Uint8Array>((subscriber) =>
      this.guarded(subscriber, (outcome) => this.mesh.post(rail, peer, tag, shape, waitMs ?? this.timeoutMs(), into ?? null, outcome), (frame: Frame) => frame.payload),
    );
  }

  release(bytes: Uint8Array): void {
    this.mesh.recycle(bytes);
  }

  waiting(rail: number, peer: number, tag: bigint): MessageEnvelope | null {
    const header = this.mesh.waiting(rail, peer, tag);
    return header === null ? null : envelopeOf(header);
  }

  /** A probe that times out fails only itself: it touched no message, so the job's matching is intact. */
  probe(rail: number, peer: number, tag: bigint, waitMs?: number): Observable<MessageEnvelope> {
    return new Observable<MessageEnvelope>((subscriber) => {
      try {
        return this.mesh.probe(rail, peer, tag, waitMs ?? this.timeoutMs(), completing(subscriber, envelopeOf));
      } catch (error) {
        subscriber.error(error);
        return undefined;
      }
    });
  }

  forget(communicator: bigint): void {
    this.mesh.forget(communicator);
  }

  heartbeat(timeoutMs: number): Observable<void> {
    return heartbeatOn(this.control, timeoutMs);
  }

  abort(message: string): number {
    return tryEach([() => this.control.abort(message), () => this.mesh.abort(message)]);
  }

  close(): void {
    this.mesh.close();
    this.control.close();
  }

  /**
   * What every send and receive goes through, in the one Observable layer a message has: the
   * mesh's outcome projected and completed, and a send or receive that fails on its own (a
   * timeout, a peer that left, a shape mismatch) takes the whole job down with its reason: the
   * abort reaches every rank (this one too, back from the coordinator), so nobody waits on a peer
   * that gave up. A failure of the mesh itself is the job's already and is not announced again.
   * The session's failure reaches messages through the mesh (see the constructor), not through an
   * operator per message. A peer that left is blamed only after `PEER_LEFT_GRACE_MS`: where the
   * session fails meanwhile (the Abort that peer sent, or the coordinator relayed, naming the rank
   * that died), the message ends with that truer reason and announces nothing.
   */
  private guarded<T, R>(subscriber: Subscriber<R>, start: (outcome: MessageOutcome<T>) => Withdraw | undefined, project: (value: T) => R): Withdraw | undefined {
    let grace: Withdraw | null = null;
    const blame = (error: unknown) => {
      // A message its caller gave up on (a sibling's failure ended the collective) announces nothing.
      if (subscriber.closed) return;
      if (!this.mesh.failed) this.abort(failureText(error));
      subscriber.error(error);
    };
    const fail = (error: unknown) => {
      if (subscriber.closed) return;
      if (!(error instanceof PeerLeftError)) blame(error);
      else if (this.onPeerNeeded !== null) {
        this.onPeerNeeded(error.peer);
        subscriber.error(error);
      } else grace = this.mesh.later(PEER_LEFT_GRACE_MS, () => blame(this.failure.failed ? this.failure.error : error));
    };
    let withdraw: Withdraw | undefined;
    try {
      withdraw = start(completing(subscriber, project, fail));
    } catch (error) {
      fail(error);
    }
    return () => {
      grace?.();
      withdraw?.();
    };
  }
}

function envelopeOf(header: FrameHeader): MessageEnvelope {
  return { source: header.sourceRank, elementType: header.elementType, count: header.elementCount, bytes: header.payloadBytes };
}

/**
 * A message's outcome as a one-value Observable's: the value (`project`ed), then completion; an
 * error goes to `error` (by default the subscriber's).
 */
function completing<T, R = T>(
  subscriber: Subscriber<R>,
  project: (value: T) => R = (value) => value as unknown as R,
  error: (error: unknown) => void = (failure) => subscriber.error(failure),
): MessageOutcome<T> {
  return {
    next: (value) => {
      subscriber.next(project(value));
      subscriber.complete();
    },
    error,
  };
}
