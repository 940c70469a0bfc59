import { defer, from } from 'rxjs';
import type { ProbeContext } from '../../lib/topology/index.js';

/**
 * The virtual cost in ns of one message: called with the message's index among those sent on
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

/**
 * An in-memory world of ranks for the probe. Each rank has its own virtual clock that only its
 * sends move: a send occupies [start, start + cost] and the clock advances to the latest end, so
 * sends awaited one after another add up while sends started together (one per rail) overlap,
 * as separate NICs would. Collectives are matched by call order and must agree on their kind,
 * so a rank stepping out of the probe's common sequence fails loudly instead of hanging.
 */
export class FakeProbeFabric {
  readonly sent: string[] = [];
  private readonly clocks: bigint[];
  private readonly mailboxes = new Map<string, Mailbox>();
  private readonly streamCounts = new Map<string, number>();
  private readonly rounds: CollectiveRound[] = [];
  private readonly roundOfRank: number[];

  constructor(
    readonly worldSize: number,
    readonly rails: number,
    private readonly cost: MessageCost,
  ) {
    // Unrelated starting times: the probe must only ever use differences.
    this.clocks = Array.from({ length: worldSize }, (_, rank) => 1_000_000_000n * BigInt(rank + 1));
    this.roundOfRank = Array.from({ length: worldSize }, () => 0);
  }

  /** Messages sent but never received, by stream. */
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
      now: () => this.clocks[rank]!,
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

  private async send(source: number, rail: number, destination: number, tag: bigint, bytes: Uint8Array): Promise<void> {
    if (rail < 0 || rail >= this.rails || destination === source) {
      throw new Error(`bad send from ${source} to ${destination} on rail ${rail}`);
    }
    const key = `${rail}:${source}->${destination}#${tag}`;
    const index = this.streamCounts.get(key) ?? 0;
    this.streamCounts.set(key, index + 1);
    this.sent.push(key);
    const start = this.clocks[source]!;
    const end = start + this.cost(source, destination, rail, bytes.length, index);
    // Yield before finishing, so sends started together all see the same start time.
    await Promise.resolve();
    if (end > this.clocks[source]!) this.clocks[source] = end;
    const box = this.mailbox(key);
    const waiter = box.waiters.shift();
    if (waiter === undefined) box.messages.push(bytes);
    else waiter(bytes);
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
