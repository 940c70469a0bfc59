import { Observable, tap } from 'rxjs';
import { failureText, ProtocolError, TimeoutError } from '../errors.js';
import { scheduleReduce } from '../kernels/index.js';
import type { OperationDescriptor } from '../protocol/agreement.js';
import { DESCRIPTOR_BYTES, encodeDescriptor } from '../protocol/descriptor-codec.js';
import { type DType, ElementType } from '../protocol/element-type.js';
import { type Opcode, opcodeName } from '../protocol/opcode.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import type { BufferPool } from '../transport/buffer-pool.js';
import { COLLECTIVE_RESPONSE_GRACE_MS } from '../transport/collective-channel.js';
import type { ExpectedShape, Links, MessageShape } from '../transport/links/links.js';
import { MAX_TIMER_DELAY_MS } from '../transport/transport-kind.js';
import type { CollectiveContext } from './algorithm.js';
import { checkAgreement } from './descriptor.js';

/**
 * What both ways of a mesh exchange (between all pairs and through the hub, docs/protocol.md 9.7)
 * share: the agreement message a rank sends, how a receiver files it, and how an exchange ends
 * when a rank does not come or only this rank saw what went wrong.
 */

/** Data of a rank that sends none with the agreement (a barrier; a broadcast's non-roots). */
export const NO_DATA = new Uint8Array(0);

/** Mesh exchange messages carry tags under this prefix ("EX"). */
export const EXCHANGE_TAG_PREFIX = 0x4558;

/** What an exchange receives: bytes of any length (a size disagreement is named, not a shape error). */
export const ANY_BYTES: ExpectedShape = { elementType: ElementType.U8, count: null };

export function bytesShape(bytes: Uint8Array): MessageShape {
  return { elementType: ElementType.U8, count: bytes.length };
}

/**
 * A rank's agreement message: its descriptor for exchange `number`, then its data, in `memory`'s
 * memory (the exchange gives it back once it has been sent: a fresh buffer per call of a mid-size
 * exchange fed the garbage collector more than the copy costs).
 */
export function agreementMessage(own: OperationDescriptor, number: bigint, data: Uint8Array, memory: BufferPool): Uint8Array {
  const message = memory.take(DESCRIPTOR_BYTES + data.length);
  encodeDescriptor(own, number, message);
  message.set(data, DESCRIPTOR_BYTES);
  return message;
}

/**
 * The agreement messages one rank of an exchange receives: each is checked against this rank's
 * descriptor (`checkAgreement`) and its data filed by rank in `parts` (this rank's own data at its
 * index); `release` gives the messages back once nothing reads the parts any more.
 */
export class AgreementInbox {
  readonly parts: Uint8Array[];
  /** Every rank but this one, ascending. */
  readonly peers: readonly number[];
  private readonly received: Uint8Array[] = [];

  constructor(
    private readonly links: Links,
    private readonly own: OperationDescriptor,
    private readonly number: bigint,
    data: Uint8Array,
  ) {
    this.parts = new Array<Uint8Array>(links.worldSize);
    this.parts[links.rank] = data;
    this.peers = Array.from({ length: links.worldSize - 1 }, (_, index) => (index < links.rank ? index : index + 1));
  }

  /** The step that receives `peer`'s agreement message, tagged `tag`. */
  receive(peer: number, tag: bigint, deadline: ExchangeDeadline): ExchangeStep {
    return {
      run: exchangeReceive(this.links, peer, tag, deadline),
      onValue: (bytes) => {
        this.received.push(bytes);
        this.parts[peer] = checkAgreement(bytes, peer, this.links.rank, this.own, this.number);
      },
    };
  }

  /** The peers whose message has not come. */
  missing(): number[] {
    return this.peers.filter((peer) => this.parts[peer] === undefined);
  }

  release(): void {
    for (const bytes of this.received) this.links.release(bytes);
  }
}

/** One send or receive of an exchange; `onValue` takes what a receive delivers (and may throw to fail the exchange). */
export interface ExchangeStep {
  readonly run: Observable<Uint8Array | void>;
  readonly onValue?: (bytes: Uint8Array) => void;
}

/** What an exchange is waiting for, to name it if it does not come. */
export interface ExchangeDeadline {
  readonly number: bigint;
  readonly opcode: Opcode;
  readonly waitMs: number;
  readonly missing: () => readonly number[];
}

/**
 * An exchange's receive of `peer`'s message: it waits a grace longer than the exchange's own
 * deadline, so that the exchange, which names every missing rank, is what fails first (a receive
 * that timed out would name only its tag, and race the hub's abort to every rank).
 */
export function exchangeReceive(links: Links, peer: number, tag: bigint, deadline: ExchangeDeadline): Observable<Uint8Array> {
  return links.receive(0, peer, tag, ANY_BYTES, undefined, Math.min(deadline.waitMs + COLLECTIVE_RESPONSE_GRACE_MS, MAX_TIMER_DELAY_MS));
}

/**
 * Runs an exchange: the steps of each round at once, the next round (built when its turn comes)
 * once every step of the last completed, then emits `result()`. Ranks that have not answered
 * within the deadline are named as missing; a timeout or a protocol failure only this rank has
 * seen aborts the job with its text (failures of the links abort by themselves).
 *
 * Once the result was emitted (its consumer has copied what it keeps: the parts are views of
 * received messages), `recycle` gives the exchange's memory back: what it sent (every send has
 * completed) and what it received. A failed exchange gives nothing back: a send may still hold
 * its memory.
 *
 * Hand-written rather than merge/concat/timeout/catchError: every small collective runs it, and
 * here its cost is the collective's cost.
 */
export function runExchange<T>(
  context: CollectiveContext,
  deadline: ExchangeDeadline,
  rounds: readonly (() => readonly ExchangeStep[])[],
  result: () => T,
  recycle: () => void,
): Observable<T> {
  return new Observable<T>((subscriber) => {
    const fail = (error: unknown) => {
      if (subscriber.closed) return;
      // This rank's own error first: an abort can come straight back and would end the steps with it.
      subscriber.error(error);
      if (error instanceof TimeoutError || error instanceof ProtocolError) context.abort(failureText(error));
    };
    const due = context.deadlines.add(Math.min(deadline.waitMs, MAX_TIMER_DELAY_MS), () =>
      fail(
        new TimeoutError(
          `rank ${context.rank} collective ${deadline.number} (${opcodeName(deadline.opcode)}) on the direct peer mesh; missing ranks [${deadline.missing().join(',')}]`,
        ),
      ),
    );
    subscriber.add(() => context.deadlines.remove(due));
    if (context.waiting !== undefined) subscriber.add(context.waiting.add(deadline.missing));
    const startRound = (index: number): void => {
      if (index === rounds.length) {
        subscriber.next(result());
        recycle();
        subscriber.complete();
        return;
      }
      const steps = rounds[index]!();
      let remaining = steps.length;
      const stepDone = () => {
        if (--remaining === 0) startRound(index + 1);
      };
      if (remaining === 0) startRound(index + 1);
      for (const step of steps) {
        if (subscriber.closed) return;
        subscriber.add(
          step.run.subscribe({
            next: (value) => {
              if (step.onValue === undefined || value === undefined) return;
              try {
                step.onValue(value);
              } catch (error) {
                fail(error);
              }
            },
            error: fail,
            complete: stepDone,
          }),
        );
      }
    };
    startRound(0);
  });
}

/** The parts one after the other in `into` (exactly their size), else in one fresh buffer. */
export function joined(parts: readonly Uint8Array[], into?: Uint8Array): Uint8Array {
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  const result = into !== undefined && into.length === total ? into : new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    result.set(part, offset);
    offset += part.length;
  }
  return result;
}

/**
 * Reduces the parts in rank order with `op` (into `output`, else fresh memory). They are joined in
 * scratch memory, given back once the kernel is done.
 */
export function reduceParts(context: CollectiveContext, parts: readonly Uint8Array[], dtype: DType, op: ReduceOp, output?: Uint8Array): Observable<Uint8Array> {
  const input = joined(parts, context.scratch.take(parts.reduce((sum, part) => sum + part.length, 0)));
  const into = output !== undefined ? { output } : {};
  return scheduleReduce({ dtype, op, input, slices: parts.length, ...into }).pipe(tap({ complete: () => context.scratch.give(input) }));
}

/** Checks that a peer's data has the size the agreed descriptor implies. */
export function expectBytes(part: Uint8Array, bytes: number, rank: number): Uint8Array {
  if (part.length !== bytes) throw new ProtocolError(`rank ${rank} sent ${part.length} bytes of collective data, its descriptor implies ${bytes}`);
  return part;
}
