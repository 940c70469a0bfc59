import type { Socket } from 'node:net';
import { EmptyError, type SchedulerLike, TimeoutError as RxTimeoutError } from 'rxjs';
import { ChannelClosedError, ProtocolError, RemoteAbortError, TimeoutError, WrongSessionError } from '../errors.js';
import { abortFrame, abortReason } from '../protocol/control-frames.js';
import type { Frame } from '../protocol/frame.js';
import type { FrameHeader } from '../protocol/header.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import { UniqueId } from '../protocol/unique-id.js';
import type { Admission } from './admission.js';
import { FrameChannel, outgoing } from './frame-channel.js';
import { acceptHandshake, secretRequired } from './handshake.js';
import type { JobSecret } from './job-secret.js';

/** A connection to a rank's peer listener, past its handshake: the dialler proved the secret (if any) and said hello. */
export interface AcceptedPeer {
  /** The listener's rail, or null where one listener serves every rail. */
  readonly listenerRail: number | null;
  readonly channel: FrameChannel;
  readonly hello: Frame;
}

/** How the listeners handshake an incoming connection. */
export interface PeerAcceptOptions {
  readonly rank: number;
  readonly worldSize: number;
  readonly secret: JobSecret | null;
  readonly timeoutMs: number;
  readonly admission: Admission | null;
  readonly scheduler: SchedulerLike;
}

/** Who a hello is checked against: the rank that receives it, in its job. */
export interface HelloIdentity {
  readonly uniqueId: UniqueId;
  readonly rank: number;
  readonly worldSize: number;
}

/** A refusal must not reveal the job to whoever dialled: it carries no unique id. */
const ANONYMOUS = UniqueId.fromBytes(new Uint8Array(UniqueId.BYTES));

/**
 * The front of a rank's peer listeners: handshakes every incoming connection in parallel, each
 * within its own timeout (so a silent or slow stranger never holds up a peer behind it), refuses
 * one that fails it, and passes the rest on by what their hello asks for: a link of the endpoint
 * gather to `divert` while one is set (bootstrap-links.ts), every other to `accepted`, which the
 * mesh reads. It lives as long as the listeners feed it, so a peer still gathering reaches this
 * rank's gather after this rank went on to build its mesh.
 */
export class PeerAccepts {
  /** Handshaken connections the mesh has not taken yet, oldest first. */
  private readonly queue: AcceptedPeer[] = [];
  /** Connections in their handshake. */
  private readonly handshaking = new Set<FrameChannel>();
  private wake: (() => void) | null = null;
  /** The listeners stopped feeding connections (the mesh takes what is queued, then ends). */
  private ended = false;
  /** `close`d: nothing more is taken, and whatever comes is closed. */
  private closed = false;
  /** Takes the connections whose hello it recognizes (returns true); null: the mesh gets every one. */
  divert: ((peer: AcceptedPeer) => boolean) | null = null;

  constructor(
    incoming: AsyncIterable<{ rail: number | null; socket: Socket }>,
    private readonly options: PeerAcceptOptions,
  ) {
    void this.take(incoming);
  }

  /** The handshaken connections for the mesh (its one reader), in the order their handshakes ended. */
  get accepted(): AsyncIterable<AcceptedPeer> {
    return { [Symbol.asyncIterator]: () => this.iterate() };
  }

  /**
   * Closes every connection not handed over (in its handshake, or queued for the mesh) and every
   * one that comes later: a set-up that failed leaves no socket behind.
   */
  close(): void {
    this.closed = true;
    for (const channel of this.handshaking) channel.destroy();
    this.handshaking.clear();
    for (const { channel } of this.queue.splice(0)) channel.destroy();
    this.end();
  }

  private async *iterate(): AsyncGenerator<AcceptedPeer> {
    for (;;) {
      const next = this.queue.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private end(): void {
    this.ended = true;
    this.wake?.();
    this.wake = null;
  }

  private async take(incoming: AsyncIterable<{ rail: number | null; socket: Socket }>): Promise<void> {
    try {
      for await (const { rail, socket } of incoming) {
        if (this.closed) socket.destroy();
        else void this.acceptOne(rail, socket);
      }
    } finally {
      this.end();
    }
  }

  private async acceptOne(listenerRail: number | null, socket: Socket): Promise<void> {
    const { secret, timeoutMs, scheduler, admission } = this.options;
    const channel = new FrameChannel(socket);
    this.handshaking.add(channel);
    let hello: Frame;
    try {
      hello = await acceptHandshake(channel, { secret, timeoutMs, scheduler, openingRule: emptyHelloRule })
        .finally(() => admission?.authenticated(socket))
        .catch((error: unknown) => {
          if (error instanceof EmptyError) throw new ChannelClosedError('direct peer closed during the handshake');
          if (error instanceof RxTimeoutError) throw new TimeoutError(`direct peer handshake (${timeoutMs} ms)`);
          throw error;
        });
    } catch (error) {
      refusePeer(channel, this.options, error);
      return;
    } finally {
      this.handshaking.delete(channel);
    }
    if (this.closed) {
      channel.destroy();
      return;
    }
    const peer = { listenerRail, channel, hello };
    if (this.divert?.(peer) === true) return;
    this.queue.push(peer);
    this.wake?.();
    this.wake = null;
  }
}

/**
 * Checks a PeerHello (either direction) against the rank receiving it: from `peer`, for `tag`, in
 * this job; an Abort in its place is the peer's refusal.
 */
export function checkHello(frame: Frame, identity: HelloIdentity, peer: number, tag: number): void {
  const h = frame.header;
  if (h.opcode === Opcode.Abort) {
    const reason = abortReason(frame);
    throw new RemoteAbortError(reason, `direct peer rank ${peer} aborted: ${reason}`);
  }
  secretRequired(frame, `direct peer rank ${peer}`);
  if (h.opcode !== Opcode.PeerHello) throw new ProtocolError(`direct peer link opened with ${opcodeName(h.opcode)}, expected PeerHello`);
  if (!h.uniqueId.equals(identity.uniqueId)) throw new WrongSessionError('direct peer link belongs to another session (unique id mismatch)');
  if (h.worldSize !== identity.worldSize) throw new ProtocolError(`direct peer declares world size ${h.worldSize}, expected ${identity.worldSize}`);
  if (h.sourceRank !== peer || h.destinationRank !== identity.rank) {
    throw new ProtocolError(`direct peer link is rank ${h.sourceRank} -> rank ${h.destinationRank}, expected rank ${peer} -> rank ${identity.rank}`);
  }
  if (h.tag !== BigInt(tag)) throw new ProtocolError(`direct peer link is for rail ${h.tag}, expected rail ${tag}`);
}

/** A stray or crossed connection is told why (anonymously) and dropped. */
export function refusePeer(channel: FrameChannel, identity: { readonly rank: number; readonly worldSize: number }, error: unknown): void {
  const message = `direct peer connection refused by rank ${identity.rank}: ${error instanceof Error ? error.message : String(error)}`;
  try {
    channel.send(outgoing(abortFrame({ uniqueId: ANONYMOUS, worldSize: identity.worldSize }, message)));
  } catch {
    // Gone already.
  }
  channel.finish(500);
}

/** A PeerHello is an empty frame: an opening that declares a payload is refused at its header. */
function emptyHelloRule(header: FrameHeader): void {
  if (header.payloadBytes > 0) {
    throw new ProtocolError(`direct peer link opened with ${opcodeName(header.opcode)} declaring ${header.payloadBytes} payload bytes, expected an empty PeerHello`);
  }
}
