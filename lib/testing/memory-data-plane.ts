/**
 * A model of the native data plane (native/data_links.cc, native/program_executor.cc) for memory jobs: it runs a schedule
 * under the plane's rules over the job's in-memory links, so simulated jobs run what users run by
 * default. The rules it keeps: the first message on each link of the ring of successors leaves at
 * once, a header alone where the schedule's would wait (`withHeaderExchange`); messages between two ranks on one rail (a data link: the schedule's
 * stripes, `stripeOverRails`) go one after the other; each starts with the
 * collective's header, with its message's label, which the receiver compares byte for byte with
 * the one it expects before it takes the payload (a different one ends the collective as a mismatch, naming the peer); a send goes once
 * what produces it is there; folds run as their producers complete; a collective that is not
 * over within its timeout names the peers it still waits for; `end()` stops it.
 *
 * Whole messages move at once (the engine streams them): the order of events differs, what
 * arrives where and the outcomes do not.
 */
import { Observable, type Subscription } from 'rxjs';
import { scheduleReduceSpans } from '../kernels/index.js';
import { decodeDescriptor, DESCRIPTOR_BYTES } from '../protocol/descriptor-codec.js';
import { dtypeOfElementType, ElementType } from '../protocol/element-type.js';
import type { LazyDeadlines } from '../transport/lazy-deadlines.js';
import type { Links } from '../transport/links/links.js';
import { encodeLinkHeader, type NativeOutcome } from '../transport/data-plane.js';
import { headerLabel, labelledHeader, labelText, messageLabel } from '../collectives/schedule/message-label.js';
import { withHeaderExchange } from '../collectives/schedule/header-exchange.js';
import type { NativePlane } from '../collectives/schedule/native-plane.js';
import { type Dependency, producersOf, type Schedule, type ScheduledMessage, type Span } from '../collectives/schedule/schedule.js';
import { Opcode } from '../protocol/opcode.js';
import { concatBytes } from './bytes.js';
import { previewPayload } from './payload-preview.js';

/** The tag the model's messages travel under on their rail ("DATA"): FIFO per link, as a data link is. */
export const MEMORY_DATA_LINK_TAG = 0x44415441n << 32n;

const ANY_LENGTH = { elementType: ElementType.U8, count: null };

/**
 * A model data-link message as a counterexample shows it: the collective its descriptor names,
 * its label where it is not 0, and a preview of its span in the collective's dtype (`data link
 * (AllReduce, collective 3) i32 [1, 2]`, `data link (AllReduce, collective 3, step 1 channel 0
 * stripe 0) i32 [3]`).
 */
export function describeDataLinkMessage(message: Uint8Array): string {
  if (message.length < DESCRIPTOR_BYTES) return `data link ${previewPayload(ElementType.U8, message)}`;
  const header = message.subarray(0, DESCRIPTOR_BYTES);
  const label = headerLabel(header);
  const { descriptor, sequence } = decodeDescriptor(labelledHeader(header, 0));
  const which = label === 0 ? '' : `, ${labelText(label)}`;
  return `data link (${Opcode[descriptor.opcode] ?? descriptor.opcode}, collective ${sequence}${which}) ${previewPayload(descriptor.elementType, message.subarray(DESCRIPTOR_BYTES))}`;
}

/** A native plane for rank `links.rank` of a memory job, timed by `deadlines`. */
export function memoryDataPlane(links: Links, deadlines: LazyDeadlines): NativePlane {
  let ended = false;
  let running: (() => void) | null = null;
  return {
    run: (_key, write, elementType, memory, call) =>
      new Observable<NativeOutcome | undefined>((subscriber) => {
        if (ended) {
          subscriber.next(outcome('aborted'));
          subscriber.complete();
          return undefined;
        }
        const header = encodeLinkHeader(call, new Uint8Array(DESCRIPTOR_BYTES));
        const schedule = withHeaderExchange(write, links.worldSize, links.rank);
        const run = new ModelRun(links, schedule, elementType, { ...memory, scratch: new Uint8Array(schedule.scratchBytes) }, header, (result) => {
          running = null;
          subscriber.next(result);
          subscriber.complete();
        });
        const due = deadlines.add(call.timeoutMs, () => run.timeOut());
        running = () => run.finish(outcome('aborted'));
        run.start();
        return () => {
          deadlines.remove(due);
          run.stop();
        };
      }),
    end: () => {
      ended = true;
      running?.();
    },
    close: () => {
      ended = true;
      running?.();
    },
    forget: () => undefined,
  };
}

function outcome(kind: NativeOutcome['kind'], fields: Partial<NativeOutcome> = {}): NativeOutcome {
  return { kind, peer: -1, rail: 0, label: 0, error: 0, what: '', missing: [], header: new Uint8Array(DESCRIPTOR_BYTES), ...fields };
}

/**
 * One collective of the model: its links' progress, its folds, its end. Links are numbered as the
 * engine numbers them: peer * rails + rail.
 */
class ModelRun {
  private readonly sendsTo = new Map<number, number[]>();
  private readonly receivesFrom = new Map<number, number[]>();
  private readonly sentUpTo = new Map<number, number>();
  private readonly receivedUpTo = new Map<number, number>();
  private readonly received: boolean[];
  private readonly folded: boolean[];
  private readonly sent: boolean[];
  private readonly subscriptions: Subscription[] = [];
  private over = false;
  private settling = false;
  private again = false;

  constructor(
    private readonly links: Links,
    private readonly schedule: Schedule,
    private readonly elementType: ElementType,
    private readonly memory: { readonly input: Uint8Array; readonly output: Uint8Array; readonly scratch: Uint8Array },
    private readonly header: Uint8Array,
    private readonly done: (outcome: NativeOutcome | undefined) => void,
  ) {
    schedule.sends.forEach((send, index) => this.listed(this.sendsTo, send).push(index));
    schedule.receives.forEach((receive, index) => this.listed(this.receivesFrom, receive).push(index));
    this.received = schedule.receives.map(() => false);
    this.folded = schedule.folds.map(() => false);
    this.sent = schedule.sends.map(() => false);
  }

  start(): void {
    for (const peer of this.receivesFrom.keys()) this.receiveNext(peer);
    this.settle();
  }

  stop(): void {
    this.over = true;
    for (const subscription of this.subscriptions) subscription.unsubscribe();
  }

  timeOut(): void {
    const waiting = (of: Map<number, number[]>, upTo: Map<number, number>) => [
      ...new Set([...of.entries()].filter(([link, list]) => (upTo.get(link) ?? 0) < list.length).map(([link]) => this.peerOf(link))),
    ];
    const missing = waiting(this.receivesFrom, this.receivedUpTo);
    this.finish(outcome('timed-out', { missing: (missing.length > 0 ? missing : waiting(this.sendsTo, this.sentUpTo)).sort((a, b) => a - b) }));
  }

  finish(result: NativeOutcome | undefined): void {
    if (this.over) return;
    this.stop();
    this.done(result);
  }

  private listed(by: Map<number, number[]>, message: ScheduledMessage): number[] {
    const link = message.peer * this.links.rails + (message.rail ?? 0);
    const list = by.get(link) ?? [];
    by.set(link, list);
    return list;
  }

  private peerOf(link: number): number {
    return Math.floor(link / this.links.rails);
  }

  private view(span: Span): Uint8Array {
    return this.memory[span.memory].subarray(span.offset, span.offset + span.bytes);
  }

  private isDone(dependency: Dependency | null): boolean {
    if (dependency === null) return true;
    if ('receive' in dependency) return this.received[dependency.receive]!;
    return 'fold' in dependency ? this.folded[dependency.fold]! : this.sent[dependency.send]!;
  }

  private receiveNext(link: number): void {
    const list = this.receivesFrom.get(link)!;
    const at = this.receivedUpTo.get(link) ?? 0;
    if (at === list.length) return;
    const index = list[at]!;
    const into = this.view(this.schedule.receives[index]!.span);
    const peer = this.peerOf(link);
    const expected = labelledHeader(this.header, messageLabel(this.schedule.receives[index]!));
    this.subscriptions.push(
      this.links.receive(link % this.links.rails, peer, MEMORY_DATA_LINK_TAG, ANY_LENGTH, undefined, Number.MAX_SAFE_INTEGER).subscribe({
        next: (message) => {
          const theirs = message.subarray(0, DESCRIPTOR_BYTES);
          if (theirs.length < DESCRIPTOR_BYTES || theirs.some((byte, offset) => byte !== expected[offset])) {
            this.finish(outcome('mismatch', { peer, rail: link % this.links.rails, label: headerLabel(expected), header: Uint8Array.from(theirs) }));
            return;
          }
          if (message.length !== DESCRIPTOR_BYTES + into.length) {
            this.finish(outcome('system', { peer, what: `rank ${peer} sent ${message.length - DESCRIPTOR_BYTES} payload bytes where ${into.length} were due` }));
            return;
          }
          into.set(message.subarray(DESCRIPTOR_BYTES));
          this.links.release(message);
          this.received[index] = true;
          this.receivedUpTo.set(link, at + 1);
          this.receiveNext(link);
          this.settle();
        },
        // The links fail with the session: the session's failure ends the collective.
        error: () => this.finish(outcome('aborted')),
      }),
    );
  }

  /**
   * Runs what can run, sends what can go, and ends the collective once everything has. A send may
   * deliver at once and bring a peer's answer back into this very call: that settles again after.
   */
  private settle(): void {
    if (this.settling) {
      this.again = true;
      return;
    }
    this.settling = true;
    do {
      this.again = false;
      this.settleOnce();
    } while (this.again && !this.over);
    this.settling = false;
  }

  private settleOnce(): void {
    for (let moved = true; moved && !this.over; ) {
      moved = false;
      this.schedule.folds.forEach((fold, index) => {
        if (this.folded[index] || !fold.after.every((dependency) => producersOf(dependency).parts.every((part) => this.isDone(part)))) return;
        const target = this.view(fold.target);
        const sources = fold.sources.map((source) => this.view(source));
        if (sources.length === 1 && fold.op !== 'avg') target.set(sources[0]!.slice());
        else scheduleReduceSpans({ dtype: dtypeOfElementType(this.elementType), op: fold.op, sources, output: target, divisor: fold.divisor }, Number.POSITIVE_INFINITY).subscribe();
        this.folded[index] = true;
        moved = true;
      });
    }
    for (const [link, list] of this.sendsTo) {
      for (let at = this.sentUpTo.get(link) ?? 0; at < list.length && !this.over && producersOf(this.schedule.sends[list[at]!]!.after).parts.every((part) => this.isDone(part)); at++) {
        const index = list[at]!;
        const send = this.schedule.sends[index]!;
        const message = concatBytes([labelledHeader(this.header, messageLabel(send)), this.view(send.span)]);
        this.sentUpTo.set(link, at + 1);
        // The message is a copy: its memory is free at once (the engine's once the socket took it).
        this.sent[index] = true;
        const sending = this.links.send(link % this.links.rails, this.peerOf(link), MEMORY_DATA_LINK_TAG, message, { elementType: ElementType.U8, count: message.length });
        this.subscriptions.push(sending.subscribe({ error: () => this.finish(outcome('aborted')) }));
        this.again = true;
      }
    }
    if (this.over) return;
    const sent = [...this.sendsTo].every(([link, list]) => this.sentUpTo.get(link) === list.length);
    if (sent && this.received.every(Boolean) && this.folded.every(Boolean)) this.finish(undefined);
  }
}
