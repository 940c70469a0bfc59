import { ANY_RANK } from '../protocol/constants.js';

interface Entry<T> {
  readonly source: number;
  readonly tag: bigint;
  readonly value: T;
}

/**
 * Tagged message matching for one receiver (MPI's rule, and the reference design's): a message
 * meets the oldest posted receive whose source (or ANY_RANK) and tag match it, else waits in
 * arrival order; a receive meets the oldest waiting message it matches, else waits in posting
 * order. So messages are FIFO per (source, tag), and an ANY-source receive takes the oldest
 * message of that tag from whichever rank.
 *
 * The coordinator keeps one per (rail, receiving rank); the peer mesh one per rail.
 */
export class TagMatcher<Message, Receive> {
  private readonly messages: Entry<Message>[] = [];
  private readonly receives: Entry<Receive>[] = [];

  /** A message from `source` arrived: returns the receive it meets (no longer posted), or null if it now waits. */
  offer(source: number, tag: bigint, message: Message): Receive | null {
    const index = this.receives.findIndex((receive) => (receive.source === ANY_RANK || receive.source === source) && receive.tag === tag);
    if (index < 0) {
      this.messages.push({ source, tag, value: message });
      return null;
    }
    return this.receives.splice(index, 1)[0]!.value;
  }

  /** The receive a message from `source` with `tag` would meet now (still posted), or null. */
  peek(source: number, tag: bigint): Receive | null {
    return this.receives.find((receive) => (receive.source === ANY_RANK || receive.source === source) && receive.tag === tag)?.value ?? null;
  }

  /** A receive from `source` (or ANY_RANK) is posted: returns the message it meets, or null if it now waits. */
  post(source: number, tag: bigint, receive: Receive): Message | null {
    const index = this.messages.findIndex((message) => (source === ANY_RANK || message.source === source) && message.tag === tag);
    if (index < 0) {
      this.receives.push({ source, tag, value: receive });
      return null;
    }
    return this.messages.splice(index, 1)[0]!.value;
  }

  /** The oldest waiting message a receive from `source` (or ANY_RANK) with `tag` would take, left waiting; or null. */
  find(source: number, tag: bigint): Message | null {
    return this.messages.find((message) => (source === ANY_RANK || message.source === source) && message.tag === tag)?.value ?? null;
  }

  /** Takes back a posted receive (cancelled or timed out); false if it was no longer waiting. */
  withdraw(receive: Receive): boolean {
    const index = this.receives.findIndex((entry) => entry.value === receive);
    if (index >= 0) this.receives.splice(index, 1);
    return index >= 0;
  }

  /** Removes and returns every posted receive that `select` picks (say, those waiting on a rank that left). */
  takeReceives(select: (source: number, tag: bigint) => boolean): Receive[] {
    const taken: Receive[] = [];
    for (let index = this.receives.length - 1; index >= 0; index--) {
      const entry = this.receives[index]!;
      if (select(entry.source, entry.tag)) {
        taken.unshift(entry.value);
        this.receives.splice(index, 1);
      }
    }
    return taken;
  }

  /** Removes and returns every waiting message whose tag `select` picks (say, of a communicator that failed). */
  takeMessages(select: (tag: bigint) => boolean): Message[] {
    const taken: Message[] = [];
    for (let index = this.messages.length - 1; index >= 0; index--) {
      if (select(this.messages[index]!.tag)) taken.unshift(this.messages.splice(index, 1)[0]!.value);
    }
    return taken;
  }

  /** True if a receive posted from `source` itself (not ANY_RANK) waits for a message. */
  awaits(source: number): boolean {
    return this.receives.some((receive) => receive.source === source);
  }

  /** True if a message from `source` waits for a receive. */
  holdsFrom(source: number): boolean {
    return this.messages.some((message) => message.source === source);
  }

  /** Every waiting message, oldest first (for accounting and error messages). */
  waitingMessages(): readonly Message[] {
    return this.messages.map((message) => message.value);
  }
}
