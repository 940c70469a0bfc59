import { map, type Observable } from 'rxjs';
import { ANY_COUNT, ANY_RANK } from '../../protocol/constants.js';
import { ElementType } from '../../protocol/element-type.js';
import { Opcode } from '../../protocol/opcode.js';
import type { ExpectedShape, MessageShape, SessionLinks } from './links.js';
import type { RailClient } from './rail-client.js';
import { tryEach } from './try-each.js';

/**
 * tcp_host_staged: every rail is a channel to the coordinator, which matches sends with receives
 * and forwards the bytes. A send completes when the coordinator acknowledged it.
 */
export class StagedLinks implements SessionLinks {
  constructor(
    readonly rank: number,
    readonly worldSize: number,
    private readonly clients: readonly RailClient[],
    /** The session timeout at the time of each request (`setTimeout` changes it). */
    private readonly timeoutMs: () => number,
  ) {}

  get rails(): number {
    return this.clients.length;
  }

  send(rail: number, peer: number, tag: bigint, bytes: Uint8Array, shape: MessageShape): Observable<void> {
    return this.clients[rail]!.request({
      opcode: Opcode.Send,
      peer,
      tag,
      elementType: shape.elementType,
      elementCount: shape.count,
      payload: bytes,
      timeoutMs: this.timeoutMs(),
    }).pipe(map(() => undefined));
  }

  receive(rail: number, peer: number, tag: bigint, shape: ExpectedShape, _into?: Uint8Array, waitMs?: number): Observable<Uint8Array> {
    const elementCount = shape.count ?? ANY_COUNT;
    return this.clients[rail]!.request({ opcode: Opcode.Receive, peer, tag, elementType: shape.elementType, elementCount, timeoutMs: waitMs ?? this.timeoutMs() }).pipe(
      map((frame) => frame.payload),
    );
  }

  release(): void {
    // Payloads from the coordinator's rails are fresh memory: nothing to take back.
  }

  heartbeat(timeoutMs: number): Observable<void> {
    return heartbeatOn(this.clients[0]!, timeoutMs);
  }

  abort(message: string): number {
    return tryEach(this.clients.map((client) => () => client.abort(message)));
  }

  close(): void {
    for (const client of this.clients) client.close();
  }
}

/** An empty Heartbeat through the coordinator's point-to-point router (rail 0 or the control channel). */
export function heartbeatOn(client: RailClient, timeoutMs: number): Observable<void> {
  return client
    .request({ opcode: Opcode.Heartbeat, peer: ANY_RANK, tag: 0n, elementType: ElementType.None, elementCount: 0, timeoutMs })
    .pipe(map(() => undefined));
}
