import type { Socket } from 'node:net';
import { ConfigurationError, RxcclError } from '../errors.js';

/** How long after its handshake timeout the admission's backstop closes a connection. */
export const ADMISSION_GRACE_MS = 1_000;

export interface AdmissionOptions {
  /** Connections held before they authenticate, at once; a new one past it evicts an older one. */
  readonly cap: number;
  /**
   * How long a connection may stay unauthenticated (from its TCP accept) before it is closed: a
   * backstop behind the TLS handshake timeout and the handshake's own timer, for every state
   * between them (for example queued before the acceptor reads it).
   */
  readonly deadlineMs: number;
  /** Told of a connection closed before it reached its acceptor (during its TLS handshake). */
  readonly onDropped?: (error: RxcclError) => void;
}

interface Unauthenticated {
  readonly key: string;
  readonly raw: Socket;
  /** What the acceptor reads frames from: `raw`, or the TLS socket over it once handed over. */
  carrier: Socket | null;
  readonly source: string;
  /** Arrival order, for ties between equally busy sources. */
  readonly arrival: number;
  readonly deadline: NodeJS.Timeout;
}

/**
 * Every connection a listener accepts counts here from its TCP accept until it authenticates
 * (the TLS handshake included), so no pre-authentication state is free or unbounded.
 *
 * Past the cap the listener does not refuse the newcomer: that made the cap a zero-byte denial of
 * service, where a stranger holding `cap` idle connections kept every rank out. It closes the
 * oldest connection of the source holding the most instead, so a flood only shortens its own
 * connections' lives, and a rank, whose handshake takes milliseconds, is evicted only if `cap`
 * newer connections arrive from its own address during it (then it retries: connect-channel.ts).
 */
export class Admission {
  private readonly bySource = new Map<string, Unauthenticated[]>();
  private readonly byKey = new Map<string, Unauthenticated>();
  private arrivals = 0;

  constructor(readonly options: AdmissionOptions) {}

  /** Connections held now. */
  get size(): number {
    return this.byKey.size;
  }

  /** Counts a new TCP connection (a raw socket, before any TLS). */
  admit(raw: Socket): void {
    // Until an acceptor reads it (a peer listener's connections wait in a queue), an error (a reset,
    // or the close below) has nobody else to hear it, and an unheard 'error' ends the process.
    raw.on('error', () => undefined);
    const source = raw.remoteAddress ?? 'unknown';
    const key = keyOf(raw);
    if (key === null) {
      raw.destroy();
      return;
    }
    if (this.byKey.size >= this.options.cap) this.evictFrom(this.busiestSource(source));
    const deadline = setTimeout(() => this.close(entry, new RxcclError('TIMEOUT', `no authentication within ${this.options.deadlineMs} ms`)), this.options.deadlineMs);
    deadline.unref();
    const entry: Unauthenticated = { key, raw, carrier: null, source, arrival: this.arrivals++, deadline };
    this.byKey.set(key, entry);
    const held = this.bySource.get(source) ?? [];
    held.push(entry);
    this.bySource.set(source, held);
    raw.once('close', () => this.forget(entry));
  }

  /** The connection now carries frames (`socket` is `raw`, or the TLS socket over it). */
  handOver(socket: Socket): void {
    const entry = this.entryOf(socket);
    if (entry !== undefined) entry.carrier = socket;
  }

  /** The connection proved itself (or said who it is, without a secret): it no longer counts. */
  authenticated(socket: Socket): void {
    const entry = this.entryOf(socket);
    if (entry !== undefined) this.forget(entry);
  }

  private entryOf(socket: Socket): Unauthenticated | undefined {
    const key = keyOf(socket);
    return key === null ? undefined : this.byKey.get(key);
  }

  /**
   * The source that holds the most connections, counting the newcomer from `arriving`; of equals,
   * the one whose oldest connection came first (so never the newcomer's own, unless it holds more).
   */
  private busiestSource(arriving: string): string {
    let busiest: { source: string; count: number; since: number } | null = null;
    for (const [source, held] of this.bySource) {
      const count = held.length + (source === arriving ? 1 : 0);
      const since = held[0]!.arrival;
      if (busiest === null || count > busiest.count || (count === busiest.count && since < busiest.since)) busiest = { source, count, since };
    }
    return busiest?.source ?? arriving;
  }

  private evictFrom(source: string): void {
    const held = this.bySource.get(source);
    const oldest = held?.[0];
    if (oldest === undefined) return;
    this.close(oldest, new ConfigurationError(`too many unauthenticated connections (${this.options.cap}): closed the oldest of the ${held!.length} from ${source}`));
  }

  /**
   * Closes a connection that did not authenticate. Once handed over, the acceptor's handshake
   * fails with the reason (and reports it); before that only `onDropped` hears of it.
   */
  private close(entry: Unauthenticated, error: RxcclError): void {
    this.forget(entry);
    if (entry.carrier !== null) {
      entry.carrier.destroy(error);
      entry.raw.destroy();
      return;
    }
    entry.raw.destroy();
    this.options.onDropped?.(error);
  }

  private forget(entry: Unauthenticated): void {
    if (this.byKey.get(entry.key) !== entry) return;
    clearTimeout(entry.deadline);
    this.byKey.delete(entry.key);
    const held = this.bySource.get(entry.source)!;
    held.splice(held.indexOf(entry), 1);
    if (held.length === 0) this.bySource.delete(entry.source);
  }
}

/**
 * A connection's two ends: the same for a raw socket and the TLS socket over it, and distinct
 * across the listeners (rails) that share one admission, where one remote port may recur.
 */
function keyOf(socket: Socket): string | null {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  return remoteAddress === undefined || remotePort === undefined ? null : `${remoteAddress}|${remotePort}|${localAddress}|${localPort}`;
}
