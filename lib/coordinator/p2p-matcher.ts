import { ConfigurationError, RemoteAbortError, WrongSessionError } from '../errors.js';
import { ANY_COUNT, ANY_RANK, MAX_FRAME_PAYLOAD_BYTES } from '../protocol/constants.js';
import { ElementType, elementTypeName } from '../protocol/element-type.js';
import { frameText, makeHeader, type Frame } from '../protocol/frame.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import type { OutgoingFrame } from '../transport/frame-channel.js';
import { TagMatcher } from '../transport/tag-matcher.js';
import { headerKey, keysText, keyText } from '../protocol/message-key.js';

/**
 * Unmatched sends one rank may have acknowledged at the coordinator per rail unless
 * `CoordinatorOptions.p2pBufferLimitBytes` says otherwise: 1 GiB, the largest frame.
 */
export const DEFAULT_P2P_BUFFER_LIMIT_BYTES = MAX_FRAME_PAYLOAD_BYTES;

/** A send waiting for its receive; unacknowledged (withheld) while its sender is over the buffer limit. */
interface UnmatchedSend {
  readonly frame: Frame;
  readonly acknowledged: boolean;
}

/** A frame the router must write to one rank's connection on this rail. */
export interface Delivery {
  readonly rank: number;
  readonly frame: OutgoingFrame;
}

/**
 * Point-to-point matching for one rail (the reference design's `route_p2p_request`): a Send is
 * acknowledged and either meets a posted Receive or waits; a Receive meets the oldest matching
 * Send or waits. Matching is by (source, destination, tag) with ANY source, FIFO per match key.
 *
 * Beyond the reference, memory is bounded per (sending rank, rail), without ever pausing a
 * connection (its Heartbeat, Abort and Leave must still be read):
 * * a Send is acknowledged at once while the rank's unmatched bytes stay within `bufferLimit`;
 * * past that it is kept but its acknowledgement is withheld until a receive takes it, so a rank
 *   whose `send` waits for its acknowledgement (every rxccl rank) cannot park more;
 * * a rank that keeps sending anyway (its withheld bytes would pass `bufferLimit` on top of a
 *   send already withheld) fails the session, named: `point-to-point rank 0 has N bytes of sends
 *   waiting unacknowledged on rail 0 (tags 2, 3), over the limit of L bytes: ...`.
 * So one rank parks at most `bufferLimit` acknowledged bytes plus `bufferLimit` (or one frame)
 * withheld: twice the default limit, 2 GiB.
 */
export class P2pMatcher {
  /** One matcher per receiving rank: messages keyed by sender, receives by the source they name. */
  private readonly byReceiver: TagMatcher<UnmatchedSend, Frame>[];
  private readonly bufferedBytes: number[];
  private readonly withheldBytes: number[];

  constructor(
    private readonly uniqueId: UniqueId,
    private readonly worldSize: number,
    /** Eagerly acknowledged unmatched bytes per sending rank; as much again may wait withheld. */
    private readonly bufferLimit = DEFAULT_P2P_BUFFER_LIMIT_BYTES,
    /** The rail this matcher serves, for error messages. */
    private readonly rail = 0,
  ) {
    this.byReceiver = Array.from({ length: worldSize }, () => new TagMatcher<UnmatchedSend, Frame>());
    this.bufferedBytes = new Array<number>(worldSize).fill(0);
    this.withheldBytes = new Array<number>(worldSize).fill(0);
  }

  /** Bytes of `rank`'s sends waiting here for a receive. */
  bufferedBy(rank: number): number {
    return this.bufferedBytes[rank]!;
  }

  /** Bytes of `rank`'s sends waiting here whose acknowledgement is withheld. */
  withheldBy(rank: number): number {
    return this.withheldBytes[rank]!;
  }

  /** Routes one request from `rank`'s connection; throws on invalid requests and on Abort. */
  route(rank: number, frame: Frame): Delivery[] {
    this.validate(rank, frame);
    const header = frame.header;
    switch (header.opcode) {
      case Opcode.Send: {
        const bytes = frame.payload.length;
        const eager = this.bufferedBytes[rank]! + bytes <= this.bufferLimit;
        const receive = this.byReceiver[header.destinationRank]!.offer(rank, headerKey(header), { frame, acknowledged: eager });
        if (receive !== null) return [this.acknowledge(frame), this.deliver(frame, receive)];
        this.bufferedBytes[rank]! += bytes;
        if (eager) return [this.acknowledge(frame)];
        this.checkWithheld(rank, frame);
        this.withheldBytes[rank]! += bytes;
        return [];
      }
      case Opcode.Receive: {
        const send = this.byReceiver[rank]!.post(header.destinationRank, headerKey(header), frame);
        if (send === null) return [];
        const sender = send.frame.header.sourceRank;
        this.bufferedBytes[sender]! -= send.frame.payload.length;
        const deliveries = [this.deliver(send.frame, frame)];
        if (!send.acknowledged) {
          this.withheldBytes[sender]! -= send.frame.payload.length;
          deliveries.push(this.acknowledge(send.frame));
        }
        return deliveries;
      }
      case Opcode.Heartbeat:
        return [{ rank, frame: this.reply(Opcode.Heartbeat, frame, rank) }];
      case Opcode.Leave:
        return [];
      case Opcode.Abort:
        throw new RemoteAbortError(`rank ${rank} aborted: ${frameText(frame)}`);
      default:
        throw new ConfigurationError(`opcode ${opcodeName(header.opcode)} is invalid on the point-to-point channel`);
    }
  }

  /**
   * A send past the buffer limit waits withheld; a rank may have one of any size (one awaited
   * send), or several within the limit. More means its sends do not wait for their
   * acknowledgements: the session fails rather than holding unbounded data.
   */
  private checkWithheld(rank: number, send: Frame): void {
    const withheld = this.withheldBytes[rank]!;
    if (withheld === 0 || withheld + send.payload.length <= this.bufferLimit) return;
    // Every send of this rank waiting withheld, this one included (it is queued already).
    const waiting = this.byReceiver.flatMap((matcher) => matcher.waitingMessages().filter((s) => !s.acknowledged && s.frame.header.sourceRank === rank));
    const tags = [...new Set(waiting.map((s) => headerKey(s.frame.header)))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    throw new ConfigurationError(
      `point-to-point rank ${rank} has ${withheld + send.payload.length} bytes of sends waiting unacknowledged on rail ${this.rail} ` +
        `(${keysText(tags)}), over the limit of ${this.bufferLimit} bytes: its sends do not wait for their acknowledgements; ` +
        'await each send, or post the receives first',
    );
  }

  private acknowledge(send: Frame): Delivery {
    return { rank: send.header.sourceRank, frame: this.reply(Opcode.Send, send, send.header.sourceRank) };
  }

  private reply(opcode: Opcode, request: Frame, destination: number): OutgoingFrame {
    const header = makeHeader(
      {
        uniqueId: this.uniqueId,
        opcode,
        sourceRank: request.header.sourceRank,
        destinationRank: destination,
        worldSize: this.worldSize,
        sequence: request.header.sequence,
        tag: request.header.tag,
        communicator: request.header.communicator,
      },
      0,
    );
    return { header, parts: [] };
  }

  private deliver(send: Frame, receive: Frame): Delivery {
    const s = send.header;
    const r = receive.header;
    if (s.elementType !== r.elementType || (s.elementCount !== r.elementCount && r.elementCount !== ANY_COUNT)) {
      throw new ConfigurationError(
        `point-to-point ${keyText(headerKey(s))} contract mismatch: send ${elementTypeName(s.elementType)}/${s.elementCount} ` +
          `receive ${elementTypeName(r.elementType)}/${r.elementCount === ANY_COUNT ? 'any' : r.elementCount} (rank ${s.sourceRank} -> rank ${r.sourceRank})`,
      );
    }
    const header = makeHeader(
      {
        uniqueId: this.uniqueId,
        opcode: Opcode.Receive,
        elementType: s.elementType,
        sourceRank: s.sourceRank,
        destinationRank: r.sourceRank,
        worldSize: this.worldSize,
        sequence: r.sequence,
        tag: s.tag,
        communicator: s.communicator,
        elementCount: s.elementCount,
      },
      send.payload.length,
    );
    return { rank: r.sourceRank, frame: { header, parts: [send.payload] } };
  }

  private validate(rank: number, frame: Frame): void {
    const h = frame.header;
    if (!h.uniqueId.equals(this.uniqueId)) throw new WrongSessionError('point-to-point frame belongs to another session');
    if (h.worldSize !== this.worldSize || h.sourceRank !== rank) {
      throw new ConfigurationError(
        `point-to-point connection rank ${rank} submitted source ${h.sourceRank} and world ${h.worldSize}`,
      );
    }
    if (h.rootRank !== ANY_RANK) throw new ConfigurationError('point-to-point request cannot declare a collective root');
    const emptyControl =
      h.destinationRank === ANY_RANK && h.elementType === ElementType.None && h.elementCount === 0 && frame.payload.length === 0;
    switch (h.opcode) {
      case Opcode.Send:
        if (h.destinationRank === ANY_RANK) throw new ConfigurationError('point-to-point send requires a destination rank');
        if (frame.payload.length === 0 && h.elementCount > 0) {
          throw new ConfigurationError(`point-to-point send with ${keyText(headerKey(h))} declares ${h.elementCount} elements but carries no data`);
        }
        break;
      case Opcode.Receive:
        if (frame.payload.length > 0) throw new ConfigurationError('point-to-point receive request cannot carry data');
        break;
      case Opcode.Abort:
        if (h.destinationRank !== ANY_RANK || h.elementType !== ElementType.U8 || frame.payload.length === 0) {
          throw new ConfigurationError('point-to-point abort requires a non-empty U8 message');
        }
        break;
      case Opcode.Heartbeat:
        if (!emptyControl) throw new ConfigurationError('point-to-point heartbeat must be an empty control frame');
        break;
      case Opcode.Leave:
        if (!emptyControl) throw new ConfigurationError('point-to-point LEAVE must be an empty control frame');
        break;
      default:
        throw new ConfigurationError(`opcode ${opcodeName(h.opcode)} is invalid on the point-to-point channel`);
    }
  }
}

