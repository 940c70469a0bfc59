import type { Socket } from 'node:net';
import { AsyncSink } from 'ix/asynciterable';
import { firstValueFrom, forkJoin, map, type Observable, type SchedulerLike } from 'rxjs';
import { addonPlane } from '../collectives/schedule/plane-executor.js';
import type { NativePlane } from '../collectives/schedule/native-plane.js';
import { dataPlaneEngine } from '../kernels/addon.js';
import { ElementType } from '../protocol/element-type.js';
import type { UniqueId } from '../protocol/unique-id.js';
import type { JobSecret } from '../transport/job-secret.js';
import { DataPlane } from '../transport/data-plane.js';
import type { SessionLinks } from '../transport/links/links.js';
import { bindPeerListeners, formatRankEndpoints, type PeerEndpointConfiguration, readRankPublication, type SocketAddressText } from '../transport/peer-endpoint-config.js';
import { PeerMesh } from '../transport/peer-mesh.js';
import { communicatorUniqueId } from './communicator-id.js';

/**
 * What a job whose world runs the native data plane leaves for its communicators to open planes of
 * their own (docs/architecture.md, "Communicators"): where to listen, how to authenticate, and
 * where each job rank is.
 */
export interface CommunicatorPlaneParts {
  /** The job's listen configuration, every port 0 (the system picks). */
  readonly configuration: PeerEndpointConfiguration;
  readonly rails: number;
  readonly uniqueId: UniqueId;
  readonly secret: JobSecret | null;
  readonly timeoutMs: number;
  readonly scheduler: SchedulerLike;
  readonly unmatchedBytesLimit: number;
  readonly spin: number | 'auto';
  readonly inline: number | 'auto';
  readonly singleCopy: boolean;
  readonly sharedMemory: boolean;
  /** The owner of this rank's planes (`planeOwner`): a communicator's plane serves the same rank as the world's. */
  readonly owner: number;
  /** Every job rank's advertised endpoints (the world's table): a member's host is taken from it. */
  readonly worldEndpoints: readonly (readonly SocketAddressText[])[];
}

/** The tag of the endpoint messages a communicator's members trade over its set-up links. */
const PLANE_ENDPOINTS_TAG = 0x504c414e45n; // "PLANE"

/** What a member publishes when it cannot listen: then no member opens a plane. */
const NO_PLANE = 'none';

/**
 * Opens a native data plane for a communicator of `jobRanks` (this rank is `rank` of them): NCCL's
 * model, connections of the communicator's own, so that its collectives run on an engine thread of
 * their own beside the world's and every other communicator's, in its own order. Each member binds
 * listeners (port 0), trades their endpoints with every other member over `setup` (the job's
 * links, under a set-up communicator id), then the members build a peer mesh of their own (the
 * job's secret authenticates it, the communicator's unique id names it) whose data links the
 * engine takes. Every member decides alike from what it received: where any could not listen, none
 * opens one (null: the communicator runs on the JS plane). `ended` erroring (`setup`'s failure: a
 * member lost) ends the set-up at once with its error, leaving nothing open.
 */
export async function openCommunicatorPlane(
  parts: CommunicatorPlaneParts,
  setup: SessionLinks,
  ended: Observable<never>,
  id: bigint,
  jobRanks: readonly number[],
  rank: number,
): Promise<NativePlane | null> {
  const engine = dataPlaneEngine();
  const worldSize = jobRanks.length;
  const incoming = new AsyncSink<{ rail: number | null; socket: Socket }>();
  let listeners: Awaited<ReturnType<typeof bindPeerListeners>> | null = null;
  try {
    listeners = engine === null ? null : await bindPeerListeners(parts.configuration, parts.rails, (rail, socket) => incoming.write({ rail, socket }));
  } catch {
    listeners = null;
  }
  try {
    const published = listeners === null ? NO_PLANE : formatRankEndpoints(listeners.endpoints);
    const texts = await tradeEndpoints(setup, rank, worldSize, published, parts.timeoutMs);
    if (engine === null || listeners === null || texts.includes(NO_PLANE)) return null;
    const endpoints = texts.map((text, member) => readRankPublication(text, member, parts.rails, parts.worldEndpoints[jobRanks[member]!]![0]!.host).endpoints);
    const mesh = await PeerMesh.connect({
      identity: { uniqueId: communicatorUniqueId(id), rank, worldSize, rails: parts.rails, dataLinks: true },
      endpoints,
      incoming,
      timeoutMs: parts.timeoutMs,
      scheduler: parts.scheduler,
      unmatchedBytesLimit: parts.unmatchedBytesLimit,
      secret: parts.secret,
      admission: listeners.admission,
      ended,
    });
    // Only the data links carry anything: the mesh's own links stay idle until the plane closes.
    mesh.failureHandler = () => undefined;
    const host = parts.worldEndpoints[jobRanks[rank]!]![0]!.host;
    const sameHost = jobRanks.flatMap((jobRank, member) => (member !== rank && parts.worldEndpoints[jobRank]![0]!.host === host ? [member] : []));
    let plane: NativePlane;
    try {
      plane = addonPlane(DataPlane.open(engine, rank, worldSize, mesh.dataLinks!, { spin: parts.spin, inline: parts.inline, sameHost, singleCopy: parts.singleCopy, sharedMemory: parts.sharedMemory, owner: parts.owner }), rank, worldSize);
    } catch (error) {
      // No plane took the data links: they close with the mesh.
      for (const socket of [...mesh.dataLinks!.send, ...mesh.dataLinks!.receive]) socket?.destroy();
      mesh.close();
      throw error;
    }
    // Closing the plane closes its data links, then the mesh's idle ones.
    return {
      ...plane,
      close: () => {
        plane.close();
        mesh.close();
      },
    };
  } finally {
    incoming.end();
    for (const server of listeners?.servers ?? []) server.close();
    // A member that finished its trade may have dialled in before this one's set-up ended: a
    // connection no mesh took is closed (one the mesh takes meanwhile, it refuses).
    void closeUntaken(incoming);
  }
}

async function closeUntaken(incoming: AsyncSink<{ rail: number | null; socket: Socket }>): Promise<void> {
  for await (const { socket } of incoming) socket.destroy();
}

/** Sends `text` to every other member and receives theirs: every member's text, by member. */
function tradeEndpoints(setup: SessionLinks, rank: number, worldSize: number, text: string, timeoutMs: number): Promise<string[]> {
  const bytes = new TextEncoder().encode(text);
  const others = Array.from({ length: worldSize }, (_, member) => member).filter((member) => member !== rank);
  const shape = { elementType: ElementType.U8, count: bytes.length };
  const sends = others.map((member) => setup.send(0, member, PLANE_ENDPOINTS_TAG, bytes, shape));
  const receives = others.map((member) =>
    setup.receive(0, member, PLANE_ENDPOINTS_TAG, { elementType: ElementType.U8, count: null }, undefined, timeoutMs).pipe(map((received) => new TextDecoder().decode(received))),
  );
  return firstValueFrom(forkJoin([...sends, ...receives])).then((results) => {
    const texts = new Array<string>(worldSize);
    texts[rank] = text;
    others.forEach((member, index) => (texts[member] = results[sends.length + index] as string));
    return texts;
  });
}
