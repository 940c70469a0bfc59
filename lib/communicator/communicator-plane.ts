import type { Socket } from 'node:net';
import { AsyncSink } from 'ix/asynciterable';
import { firstValueFrom, forkJoin, map, type SchedulerLike } from 'rxjs';
import { addonPlane } from '../collectives/schedule/plane-executor.js';
import type { NativePlane } from '../collectives/schedule/native-plane.js';
import { ChannelClosedError, failureText } from '../errors.js';
import { dataPlaneEngine } from '../kernels/addon.js';
import { ElementType } from '../protocol/element-type.js';
import { communicatorText } from '../protocol/message-key.js';
import type { UniqueId } from '../protocol/unique-id.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS } from '../transport/handshake.js';
import type { JobSecret } from '../transport/job-secret.js';
import type { SessionLinks } from '../transport/links/links.js';
import { onDemandPlane } from '../transport/on-demand-plane.js';
import { PeerAccepts } from '../transport/peer-accepts.js';
import { bindPeerListeners, formatRankEndpoints, type PeerEndpointConfiguration, readRankPublication, type SocketAddressText } from '../transport/peer-endpoint-config.js';
import { PeerMesh } from '../transport/peer-mesh.js';
import type { RankLosses } from '../transport/rank-losses.js';
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
 * listeners (port 0) and the members trade their endpoints over `setup` (the job's links, under a
 * set-up communicator id; `tradeEndpoints`). Every member decides alike from what it received:
 * where any could not listen, none opens one (null: the communicator runs on the JS plane). Else
 * each builds a peer mesh of its own (the job's secret authenticates it, the communicator's unique
 * id names it) whose links open on demand as the world's do (docs/architecture.md, "Links on
 * demand"): nothing is dialled here; a schedule's first run opens the pairs it names, and the
 * listeners stay open (unreferenced) until the plane closes. A dial that fails is told to every
 * member through `setup`'s abort (the job's, as any abort from a communicator); in a fault-tolerant
 * job (`losses`) the peer is lost instead and the collective ends as if its link had closed.
 * `setup`'s failure (a member lost) ends the trade at once with its error, leaving nothing open.
 */
export async function openCommunicatorPlane(
  parts: CommunicatorPlaneParts,
  setup: SessionLinks,
  id: bigint,
  jobRanks: readonly number[],
  rank: number,
  losses: RankLosses | null,
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
  // One front for the listeners from the start: a member that finished its trade may dial before
  // this one's mesh is made (the front keeps the link for it), or after this one gave up (closing
  // the front closes it).
  const { secret, scheduler, timeoutMs } = parts;
  const accepts = new PeerAccepts(incoming, { rank, worldSize, secret, timeoutMs: Math.min(DEFAULT_HANDSHAKE_TIMEOUT_MS, timeoutMs), admission: listeners?.admission ?? null, scheduler });
  const closeListeners = () => {
    incoming.end();
    for (const server of listeners?.servers ?? []) server.close();
  };
  let mesh: PeerMesh | null = null;
  try {
    const published = listeners === null ? NO_PLANE : formatRankEndpoints(listeners.endpoints);
    const texts = await tradeEndpoints(setup, rank, worldSize, published, timeoutMs);
    if (engine === null || listeners === null || texts.includes(NO_PLANE)) {
      accepts.close();
      closeListeners();
      return null;
    }
    const endpoints = texts.map((text, member) => readRankPublication(text, member, parts.rails, parts.worldEndpoints[jobRanks[member]!]![0]!.host).endpoints);
    const opened = await PeerMesh.connect({
      identity: { uniqueId: communicatorUniqueId(id), rank, worldSize, rails: parts.rails, dataLinks: true },
      endpoints,
      incoming: accepts,
      timeoutMs,
      scheduler,
      unmatchedBytesLimit: parts.unmatchedBytesLimit,
      secret,
      admission: listeners.admission,
      onDemand: { closeListeners },
    });
    mesh = opened;
    for (const server of listeners.servers) server.unref();
    // Only the data links carry anything (the mesh's own never open): a failure the mesh finds
    // (a dial that failed) reaches every member on the job's links.
    opened.detectedFailureHandler = (error) => void setup.abort(failureText(error));
    if (losses !== null) opened.departureHandler = (peer) => losses.suspect(jobRanks[peer]!, `its native data links of communicator ${communicatorText(id)} could not open`);
    const host = parts.worldEndpoints[jobRanks[rank]!]![0]!.host;
    const sameHost = jobRanks.flatMap((jobRank, member) => (member !== rank && parts.worldEndpoints[jobRank]![0]!.host === host ? [member] : []));
    const plane = addonPlane(onDemandPlane(engine, opened, { spin: parts.spin, inline: parts.inline, sameHost, singleCopy: parts.singleCopy, sharedMemory: parts.sharedMemory, owner: parts.owner }), rank, worldSize);
    // Ending the plane (the communicator failed, or aborted) ends the links it is still opening;
    // closing it closes its data links, then the mesh and its listeners.
    const ended = () => new ChannelClosedError(`rank ${rank} native plane of communicator ${communicatorText(id)} ended`);
    return {
      ...plane,
      end: () => {
        plane.end();
        opened.fail(ended());
      },
      close: () => {
        plane.close();
        opened.close();
      },
    };
  } catch (error) {
    // Nothing is open but the listeners and what came to them (a mesh closes both).
    if (mesh !== null) mesh.close();
    else {
      accepts.close();
      closeListeners();
    }
    throw error;
  }
}

/**
 * Every member's `text`, by member: an all-gather by recursive doubling over `setup`, so that a
 * member opens the job's links (on demand) to about log2 M others rather than to every other; they
 * stay open with the job's. Members past the largest power of two P not above M first give theirs
 * to member `rank - P`, which holds both through the rounds and gives them the whole table last; in
 * round k member r trades all it holds with member r xor 2^k (docs/protocol.md 13.8).
 */
async function tradeEndpoints(setup: SessionLinks, rank: number, worldSize: number, text: string, timeoutMs: number): Promise<string[]> {
  const known = new Map<number, string>([[rank, text]]);
  const send = (member: number) => {
    const bytes = encodeTexts(known);
    return setup.send(0, member, PLANE_ENDPOINTS_TAG, bytes, { elementType: ElementType.U8, count: bytes.length });
  };
  const receive = (member: number) =>
    setup.receive(0, member, PLANE_ENDPOINTS_TAG, { elementType: ElementType.U8, count: null }, undefined, timeoutMs).pipe(
      map((bytes) => {
        decodeTexts(bytes, known);
        setup.release(bytes);
      }),
    );
  const power = 2 ** Math.floor(Math.log2(worldSize));
  const extra = rank + power < worldSize ? rank + power : null;
  if (rank >= power) {
    await firstValueFrom(send(rank - power));
    await firstValueFrom(receive(rank - power));
  } else {
    if (extra !== null) await firstValueFrom(receive(extra));
    for (let distance = 1; distance < power; distance *= 2) {
      const partner = rank ^ distance;
      await firstValueFrom(forkJoin([send(partner), receive(partner)]));
    }
    if (extra !== null) await firstValueFrom(send(extra));
  }
  return Array.from({ length: worldSize }, (_, member) => known.get(member)!);
}

/** Member texts as one message: a JSON array of [member, text] pairs, by member (docs/protocol.md 13.8). */
function encodeTexts(texts: ReadonlyMap<number, string>): Uint8Array {
  return new TextEncoder().encode(JSON.stringify([...texts].sort(([a], [b]) => a - b)));
}

/** Adds the member texts of a message to `into`. */
function decodeTexts(bytes: Uint8Array, into: Map<number, string>): void {
  for (const [member, text] of JSON.parse(new TextDecoder().decode(bytes)) as [number, string][]) into.set(member, text);
}
