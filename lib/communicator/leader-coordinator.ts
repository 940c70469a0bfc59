import { concat, defer, EMPTY, ignoreElements, map, merge, mergeMap, Observable, of, type SchedulerLike } from 'rxjs';
import type { WaitingRanks } from '../collectives/waiting-ranks.js';
import { routeCollective } from '../coordinator/route-collective.js';
import { failureText, TimeoutError } from '../errors.js';
import { CollectiveAgreement } from '../protocol/agreement.js';
import { FRAME_HEADER_BYTES } from '../protocol/constants.js';
import { ElementType } from '../protocol/element-type.js';
import { makeHeader, validateFrame, type Frame } from '../protocol/frame.js';
import { decodeHeader, encodeHeader, type FrameHeader } from '../protocol/header.js';
import type { UniqueId } from '../protocol/unique-id.js';
import type { BufferPool } from '../transport/buffer-pool.js';
import { COLLECTIVE_RESPONSE_GRACE_MS, type CollectiveRequest } from '../transport/collective-channel.js';
import { LazyDeadlines } from '../transport/lazy-deadlines.js';
import type { Links } from '../transport/links/links.js';
import { receiveInto } from '../transport/links/receive-into.js';
import { MAX_TIMER_DELAY_MS } from '../transport/transport-kind.js';
import { validateResponse } from '../transport/validate-response.js';

/** The communicator rank that plays the coordinator for the others: its first. */
export const LEADER = 0;

/** The top 16 bits of the leader's messages' tags ("LD"): reserved on every communicator. */
export const LEADER_TAG_PREFIX = 0x4c44;

/** The steps of one round, in the order they happen (bits 40..47 of the tag). */
export enum LeaderStep {
  /** Member to leader: the request's 96-byte header. */
  Request = 0,
  /** Leader to member: send the payload now (only for a request with payload). */
  Go = 1,
  /** Member to leader: the request's payload. */
  Payload = 2,
  /** Leader to member: the response's 96-byte header. */
  Response = 3,
  /** Leader to member: the response's payload (only when it has one). */
  ResponsePayload = 4,
}

/** The tag of `step` of the round of collective `sequence`: prefix << 48 | step << 40 | sequence (low 40 bits). */
export function leaderTag(step: LeaderStep, sequence: bigint): bigint {
  return (BigInt(LEADER_TAG_PREFIX) << 48n) | (BigInt(step) << 40n) | (sequence & 0xff_ffff_ffffn);
}

export interface LeaderParts {
  /** The communicator's links (its ranks). */
  readonly links: Links;
  /** What its collective headers carry as their unique id (see `communicatorUniqueId`). */
  readonly uniqueId: UniqueId;
  /** `communicator 0x...`: how errors name it. */
  readonly name: string;
  /** The job rank of each communicator rank: errors name both. */
  readonly jobRanks: readonly number[];
  /** Memory for responses that only feed a kernel (`scratch`). */
  readonly pool: BufferPool;
  readonly timeoutMs: () => number;
  /** Where the leader's rounds say which members they wait for (the communicator's waiting warning), if anyone asks. */
  readonly waiting?: WaitingRanks;
  /** The clock of its round timeouts. */
  readonly scheduler: SchedulerLike;
  /** Ends the job on every rank (a mismatch, a timeout), as the coordinator's Abort does. */
  readonly abort: (reason: string) => void;
}

const NOTHING = new Uint8Array(0);

/** A request's or response's parts as one message (the links send one buffer; most have one part, sent as it is). */
function asOne(parts: readonly Uint8Array[]): Uint8Array {
  return parts.length === 0 ? NOTHING : parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}
const bytesShape = (count: number) => ({ elementType: ElementType.U8, count });

/**
 * The coordinator of a communicator, played by its first rank over the communicator's own links:
 * what the job's coordinator does for the world (the agreement, `routeCollective`, a round timeout
 * that names the missing ranks), for the collectives a communicator routes through one place: the
 * staged ones (scatter, all-to-all-v, every collective of one rank or on tcp_host_staged), raw
 * exchanges, set-timeout, and split and group themselves. The agreement of the collectives that run
 * on the links stays on the links (lib/collectives/schedule/link-agreement.ts).
 *
 * One round (docs/protocol.md 13.6): every member sends its request header; a member with payload
 * waits for the leader's go before sending it (so nothing waits unmatched at the leader); the
 * leader routes and answers each member with a response header and its payload.
 */
export class LeaderCoordinator {
  private sequence = 0n;
  private readonly agreement: CollectiveAgreement;
  private readonly deadlines: LazyDeadlines;

  constructor(private readonly parts: LeaderParts) {
    this.agreement = new CollectiveAgreement(parts.links.worldSize);
    this.deadlines = new LazyDeadlines(parts.scheduler);
  }

  /** Cold: one collective request of this rank; emits its response (see `CollectiveChannel.exchange`). */
  exchange(fields: CollectiveRequest, parts: readonly Uint8Array[], scratch = false): Observable<Frame> {
    return defer(() => {
      const { links, uniqueId } = this.parts;
      const sequence = this.sequence++;
      const payload = asOne(parts);
      const header = makeHeader({ ...fields, uniqueId, sourceRank: links.rank, worldSize: links.worldSize, sequence }, payload.length);
      const asked = this.ask(header, payload, scratch);
      return links.rank === LEADER ? merge(this.serve(sequence), asked) : asked;
    });
  }

  /** Stops its timer (the links are the job's; the communicator's failure ends a round in progress). */
  close(): void {
    this.deadlines.stop();
  }

  /** A member's side of one round. */
  private ask(header: FrameHeader, payload: Uint8Array, scratch: boolean): Observable<Frame> {
    const { links, uniqueId, pool } = this.parts;
    const { sequence } = header;
    // Past the leader's own round timeout: the leader names who is missing first.
    const waitMs = Math.min(this.parts.timeoutMs() + 2 * COLLECTIVE_RESPONSE_GRACE_MS, MAX_TIMER_DELAY_MS);
    const send = (step: LeaderStep, bytes: Uint8Array) => links.send(0, LEADER, leaderTag(step, sequence), bytes, bytesShape(bytes.length)).pipe(ignoreElements());
    const receive = (step: LeaderStep, count: number, into?: Uint8Array) => links.receive(0, LEADER, leaderTag(step, sequence), bytesShape(count), into, waitMs);
    const response = receive(LeaderStep.Response, FRAME_HEADER_BYTES).pipe(
      mergeMap((bytes) => {
        const answer = decodeHeader(bytes);
        validateResponse({ header: answer, payload: NOTHING }, uniqueId, links.rank, links.worldSize, sequence);
        if (answer.payloadBytes === 0) return of({ header: answer, payload: NOTHING });
        const into = scratch ? pool.take(answer.payloadBytes) : new Uint8Array(answer.payloadBytes);
        return receiveInto(links, 0, LEADER, leaderTag(LeaderStep.ResponsePayload, sequence), bytesShape(answer.payloadBytes), into).pipe(
          map((bytes): Frame => ({ header: answer, payload: bytes })),
        );
      }),
    );
    const sendPayload = payload.length === 0 ? EMPTY : receive(LeaderStep.Go, 0).pipe(mergeMap(() => send(LeaderStep.Payload, payload)));
    return concat(send(LeaderStep.Request, encodeHeader(header)), sendPayload, response);
  }

  /** The leader's side of one round: every member's request, routed, answered. Emits nothing. */
  private serve(sequence: bigint): Observable<never> {
    const { links, uniqueId, name } = this.parts;
    const deadlines = this.deadlines;
    const worldSize = links.worldSize;
    const ranks = Array.from({ length: worldSize }, (_, rank) => rank);
    const send = (rank: number, step: LeaderStep, bytes: Uint8Array) => links.send(0, rank, leaderTag(step, sequence), bytes, bytesShape(bytes.length));
    // Its own timer names who is missing; the receives wait longer, so that it speaks first.
    const waitMs = Math.min(this.parts.timeoutMs() + 4 * COLLECTIVE_RESPONSE_GRACE_MS, MAX_TIMER_DELAY_MS);
    const receive = (rank: number, step: LeaderStep, count: number) => links.receive(0, rank, leaderTag(step, sequence), bytesShape(count), undefined, waitMs);

    const requests = merge(
      ...ranks.map((rank) =>
        receive(rank, LeaderStep.Request, FRAME_HEADER_BYTES).pipe(
          mergeMap((bytes) => {
            const header = decodeHeader(bytes);
            if (header.payloadBytes === 0) return of({ rank, frame: { header, payload: NOTHING } });
            const payload = receive(rank, LeaderStep.Payload, header.payloadBytes).pipe(map((bytes) => ({ rank, frame: { header, payload: bytes } })));
            return merge(send(rank, LeaderStep.Go, NOTHING).pipe(ignoreElements()), payload);
          }),
        ),
      ),
    );
    return new Observable<never>((subscriber) => {
      const frames = new Array<Frame>(worldSize);
      const fail = (error: unknown) => {
        this.parts.abort(failureText(error));
        subscriber.error(error);
      };
      // Missing: a member whose request (or its payload) has not come.
      const missing = () => ranks.filter((rank) => frames[rank] === undefined);
      const waiting = this.parts.waiting?.add(missing);
      const deadline = deadlines.add(Math.min(this.parts.timeoutMs(), MAX_TIMER_DELAY_MS), () => {
        const absent = missing();
        const jobRanks = absent.map((rank) => this.parts.jobRanks[rank]);
        fail(new TimeoutError(`${name} collective sequence ${sequence}; missing ranks [${absent.join(',')}] (job ranks [${jobRanks.join(',')}])`));
      });
      const round = requests.subscribe({
        next: ({ rank, frame }) => (frames[rank] = frame),
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          deadlines.remove(deadline);
          let answers: Observable<unknown>;
          try {
            frames.forEach(validateFrame);
            const responses = routeCollective(this.agreement, uniqueId, sequence, frames);
            answers = merge(
              ...responses.map((response, rank) => {
                const body = asOne(response.parts);
                return concat(send(rank, LeaderStep.Response, encodeHeader(response.header)), body.length === 0 ? EMPTY : send(rank, LeaderStep.ResponsePayload, body));
              }),
            );
          } catch (error) {
            fail(error);
            return;
          }
          subscriber.add(answers.pipe(ignoreElements()).subscribe(subscriber));
        },
      });
      return () => {
        deadlines.remove(deadline);
        waiting?.();
        round.unsubscribe();
      };
    });
  }
}
