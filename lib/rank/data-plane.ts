import { RemoteAbortError } from '../errors.js';
import type { ElementType } from '../protocol/element-type.js';
import type { Frame } from '../protocol/frame.js';
import { Opcode } from '../protocol/opcode.js';
import type { PeerMesh } from '../transport/peer-mesh.js';
import type { P2pClient } from './p2p-client.js';

/** Where a rank's point-to-point data goes: through the coordinator's rails, or the direct peer mesh. */
export interface DataPlane {
  readonly rails: number;
  /** The coordinator channel that carries heartbeats and aborts (rail 0, or tcp_peer's control channel). */
  readonly control: P2pClient;
  send(rail: number, destination: number, tag: bigint, elementType: ElementType, count: number, payload: Uint8Array, timeoutMs: number): Promise<void>;
  receive(rail: number, source: number | null, tag: bigint, elementType: ElementType, count: number, timeoutMs: number): Promise<Frame>;
  /** Interrupts every rank's pending work with `message`; returns how many channels carried it. */
  abort(message: string): number;
  close(): void;
}

function tryEach(actions: (() => void)[]): number {
  let sent = 0;
  for (const action of actions) {
    try {
      action();
      sent += 1;
    } catch {
      // That channel is gone; the others carry the abort.
    }
  }
  return sent;
}

/** tcp_host_staged: every rail is a channel to the coordinator, which matches sends and receives. */
export class CoordinatorDataPlane implements DataPlane {
  constructor(private readonly clients: readonly P2pClient[]) {}

  get rails(): number {
    return this.clients.length;
  }

  get control(): P2pClient {
    return this.clients[0]!;
  }

  async send(rail: number, destination: number, tag: bigint, elementType: ElementType, count: number, payload: Uint8Array, timeoutMs: number): Promise<void> {
    await this.clients[rail]!.request({ opcode: Opcode.Send, peer: destination, tag, elementType, elementCount: count, payload, timeoutMs });
  }

  receive(rail: number, source: number | null, tag: bigint, elementType: ElementType, count: number, timeoutMs: number): Promise<Frame> {
    return this.clients[rail]!.request({ opcode: Opcode.Receive, peer: source ?? 0xffffffff, tag, elementType, elementCount: count, timeoutMs });
  }

  abort(message: string): number {
    return tryEach(this.clients.map((client) => () => client.abort(message)));
  }

  close(): void {
    for (const client of this.clients) client.close();
  }
}

/**
 * tcp_peer: data goes rank to rank over the mesh; the coordinator keeps one control channel for
 * heartbeats and aborts. As in the reference design, a failed send or receive aborts the job on
 * both planes, so no rank waits on a peer that will never answer.
 */
export class PeerDataPlane implements DataPlane {
  constructor(
    private readonly mesh: PeerMesh,
    readonly control: P2pClient,
  ) {}

  get rails(): number {
    return this.mesh.identity.rails;
  }

  get peerMesh(): PeerMesh {
    return this.mesh;
  }

  send(rail: number, destination: number, tag: bigint, elementType: ElementType, count: number, payload: Uint8Array, timeoutMs: number): Promise<void> {
    return this.abortOnFailure(this.mesh.send(rail, destination, tag, elementType, count, payload, timeoutMs));
  }

  receive(rail: number, source: number | null, tag: bigint, elementType: ElementType, count: number, timeoutMs: number): Promise<Frame> {
    return this.abortOnFailure(this.mesh.receive(rail, source, tag, elementType, count, timeoutMs));
  }

  abort(message: string): number {
    return tryEach([() => this.control.abort(message), () => this.mesh.abort(message)]);
  }

  close(): void {
    this.mesh.close();
    this.control.close();
  }

  private async abortOnFailure<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      const message = error instanceof Error ? (error instanceof RemoteAbortError ? error.reason : error.message) : String(error);
      this.abort(message);
      throw error;
    }
  }
}
