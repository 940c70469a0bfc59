import { defer, from } from 'rxjs';
import type { ProbeContext } from '../../lib/topology/index.js';

/**
 * The virtual time in ns a message takes: called with the message's index among those sent on
 * the same (source, destination, rail, tag) stream, so tests can model warm-up and outliers.
 */
export type MessageCost = (source: number, destination: number, rail: number, bytes: number, index: number) => bigint;

interface Mailbox {
  readonly messages: Uint8Array[];
  readonly waiters: ((bytes: Uint8Array) => void)[];
}

interface CollectiveRound {
  readonly kind: 'allGather' | 'barrier';
  readonly parts: Uint8Array[];
  arrived: number;
  readonly waiters: ((parts: Uint8Array[]) => void)[];
}

/** Something that happens at a virtual instant: a message arriving, a write completing. */
interface VirtualEvent {
  readonly at: bigint;
  readonly fire: () => void;
}

/**
 * An in-memory world of ranks for the probe, on one virtual clock shared by every rank (each rank
 * reads it from its own unrelated epoch: the probe must only ever use differences). Computation
 * takes no virtual time; messages do. A message sent at `t` arrives at `t + delivery(...)`, and
 * the sender's send completes at `t + write(...)`: by default when the bytes arrived, but a test
 * can make writes complete instantly while delivery is slow, as a socket buffer does. Messages
 * in flight together (one per rail) overlap, as separate NICs would. Collectives take no time;
 * they are matched by call order and must agree on their kind, so a rank stepping out of the
 * probe's common sequence fails loudly instead of hanging.
 */
export class FakeProbeFabric {
  readonly sent: string[] = [];
  private time = 0n;
  private readonly epochs: bigint[];
  private readonly events: VirtualEvent[] = [];
  private pumping = false;
  private readonly mailboxes = new Map<string, Mailbox>();
  private readonly streamCounts = new Map<string, number>();
  private readonly rounds: CollectiveRound[] = [];
  private readonly roundOfRank: number[];

  constructor(
    readonly worldSize: number,
    readonly rails: number,
    private readonly delivery: MessageCost,
    private readonly write: MessageCost = delivery,
  ) {
    this.epochs = Array.from({ length: worldSize }, (_, rank) => 1_000_000_000n * BigInt(rank + 1));
    this.roundOfRank = Array.from({ length: worldSize }, () => 0);
  }

  /** Messages that arrived but were never received, by stream. */
  undelivered(): string[] {
    return [...this.mailboxes].filter(([, box]) => box.messages.length > 0).map(([key]) => key);
  }

  links(rank: number): ProbeContext {
    return {
      links: {
        rank,
        worldSize: this.worldSize,
        rails: this.rails,
        send: (rail, destination, tag, bytes) => defer(() => from(this.send(rank, rail, destination, tag, bytes))),
        receive: (rail, source, tag) => defer(() => from(this.receive(rank, rail, source, tag))),
        release: () => undefined,
      },
      now: () => this.epochs[rank]! + this.time,
      allGather: (bytes) => this.collective(rank, 'allGather', bytes),
      barrier: async () => {
        await this.collective(rank, 'barrier', new Uint8Array(0));
      },
    };
  }

  private mailbox(key: string): Mailbox {
    let box = this.mailboxes.get(key);
    if (box === undefined) {
      box = { messages: [], waiters: [] };
      this.mailboxes.set(key, box);
    }
    return box;
  }

  /** Queues `fire` at virtual time `at`, after the events already queued for that instant. */
  private schedule(at: bigint, fire: () => void): void {
    const later = this.events.findIndex((event) => event.at > at);
    this.events.splice(later === -1 ? this.events.length : later, 0, { at, fire });
    if (!this.pumping) {
      this.pumping = true;
      setImmediate(() => this.pump());
    }
  }

  /**
   * Fires the earliest event, then waits a macrotask before the next: every promise continuation
   * of one event (a rank reacting to what arrived) runs, and schedules what it sends, before
   * virtual time moves on, so events fire in virtual-time order whatever the microtask order.
   */
  private pump(): void {
    const event = this.events.shift();
    if (event === undefined) {
      this.pumping = false;
      return;
    }
    this.time = event.at;
    event.fire();
    setImmediate(() => this.pump());
  }

  private send(source: number, rail: number, destination: number, tag: bigint, bytes: Uint8Array): Promise<void> {
    if (rail < 0 || rail >= this.rails || destination === source) {
      throw new Error(`bad send from ${source} to ${destination} on rail ${rail}`);
    }
    const key = `${rail}:${source}->${destination}#${tag}`;
    const index = this.streamCounts.get(key) ?? 0;
    this.streamCounts.set(key, index + 1);
    this.sent.push(key);
    const box = this.mailbox(key);
    this.schedule(this.time + this.delivery(source, destination, rail, bytes.length, index), () => {
      const waiter = box.waiters.shift();
      if (waiter === undefined) box.messages.push(bytes);
      else waiter(bytes);
    });
    const written = this.time + this.write(source, destination, rail, bytes.length, index);
    return new Promise((resolve) => this.schedule(written, resolve));
  }

  private receive(destination: number, rail: number, source: number, tag: bigint): Promise<Uint8Array> {
    const box = this.mailbox(`${rail}:${source}->${destination}#${tag}`);
    const message = box.messages.shift();
    if (message !== undefined) return Promise.resolve(message);
    return new Promise((resolve) => box.waiters.push(resolve));
  }

  private collective(rank: number, kind: CollectiveRound['kind'], bytes: Uint8Array): Promise<Uint8Array[]> {
    const index = this.roundOfRank[rank]!;
    this.roundOfRank[rank] = index + 1;
    let round = this.rounds[index];
    if (round === undefined) {
      round = { kind, parts: [], arrived: 0, waiters: [] };
      this.rounds[index] = round;
    }
    if (round.kind !== kind) {
      return Promise.reject(new Error(`rank ${rank} entered ${kind} as collective ${index}, others ${round.kind}`));
    }
    round.parts[rank] = bytes;
    round.arrived += 1;
    const done = new Promise<Uint8Array[]>((resolve) => round.waiters.push(resolve));
    if (round.arrived === this.worldSize) {
      for (const waiter of round.waiters) waiter(round.parts);
    }
    return done;
  }
}
