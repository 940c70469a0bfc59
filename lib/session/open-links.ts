import type { AddressInfo, Server, Socket } from 'node:net';
import { AsyncSink } from 'ix/asynciterable';
import type { CommunicatorPlaneParts } from '../communicator/communicator-plane.js';
import { ChannelClosedError, ConfigurationError, TimeoutError } from '../errors.js';
import { peerEndpointFrame } from '../protocol/control-frames.js';
import { type ChannelAddress, connectChannel, connectCollectiveChannel } from '../transport/connect-channel.js';
import { firstFrame } from '../transport/first-frame.js';
import { type FrameChannel, outgoing } from '../transport/frame-channel.js';
import type { SessionLinks } from '../transport/links/links.js';
import { MeshLinks } from '../transport/links/mesh-links.js';
import { RailClient, type RailOwner } from '../transport/links/rail-client.js';
import { StagedLinks } from '../transport/links/staged-links.js';
import {
  bindPeerListeners,
  type EndpointTable,
  formatRankEndpoints,
  type PeerEndpointConfiguration,
  type RankEndpoints,
  peerEndpointConfigurationFromEnvironment,
  type SocketAddressText,
} from '../transport/peer-endpoint-config.js';
import { PeerMesh } from '../transport/peer-mesh.js';
import { PeerAccepts } from '../transport/peer-accepts.js';
import { GatherLinks } from '../transport/gather-links.js';
import { readEndpointEntries } from '../transport/endpoint-entries.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS } from '../transport/handshake.js';
import { type DataPlaneEngine, planeOwner } from '../transport/data-plane.js';
import { onDemandPlane } from '../transport/on-demand-plane.js';
import type { NativePlane } from '../collectives/schedule/native-plane.js';
import { addonPlane } from '../collectives/schedule/plane-executor.js';
import { dataPlaneOffer, usesNativeDataPlane } from './data-plane-setting.js';
import { choiceDefaults, profileValue, publishedChoiceSettings } from '../collectives/choice-settings.js';
import { choiceSettingsDiffer, formatChoiceSettings } from '../transport/choice-attribute.js';
import { dataPlaneEngine } from '../kernels/addon.js';
import { warnIfUnauthenticated } from '../transport/job-secret.js';
import type { JobGrowth } from '../transport/job-growth.js';
import type { RankLosses } from '../transport/rank-losses.js';
import type { SessionFailure } from '../transport/session-failure.js';
import { agreedTransport } from '../transport/ready-transport.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import { validateResponse } from '../transport/validate-response.js';
import { meshProcessesOnHost, stagedProcessesOnHost } from './busy-poll.js';
import { hostGroups } from './host-groups.js';
import { planeSpinMicros } from './plane-spin.js';
import type { ResolvedSessionOptions } from './session-options.js';
import { peerEndpointVariables } from '../settings/setting-parts.js';

/** A session's connections: the ordered collective channel and the links for its transport. */
export interface OpenedLinks {
  /** The transport the links run: the rank's, or the coordinator's where the rank chose none (`agreedTransport`). */
  readonly transport: CollectiveTransport;
  readonly collective: FrameChannel;
  readonly links: SessionLinks;
  /** Every socket the session holds open (see `EventLoopHold`), in lists a list of links on demand grows as they open. */
  readonly sockets: readonly (readonly Socket[])[];
  /** The job's processes on this host, where the links tell (see `busyPollMicros`); null: not known. */
  readonly processesOnHost: number | null;
  /** The native data plane, where the job runs one (tcp_peer), else null. */
  readonly nativePlane: NativePlane | null;
  /** The ranks by the host they advertise (`hostGroups`; tcp_peer), else null: not known. */
  readonly hostGroups: number[][] | null;
  /** What communicators open native planes of their own with, where the world runs one, else null. */
  readonly communicatorPlanes: CommunicatorPlaneParts | null;
}

/**
 * Joins the job on every channel the transport needs (the reference design's
 * `connect_with_transport_configuration`). `timeoutMs` is read at each request, so a later
 * `setTimeout` applies to the links too.
 */
export async function openLinks(
  options: ResolvedSessionOptions,
  failure: SessionFailure,
  timeoutMs: () => number,
  losses: RankLosses | null = null,
  growth: JobGrowth | null = null,
): Promise<OpenedLinks> {
  const address = { host: options.host, port: options.port };
  // A fault-tolerant job hears of lost ranks on its first rail; the mesh closes its links to them too.
  let dropPeer: ((rank: number) => void) | null = null;
  const rankLost =
    losses === null
      ? {}
      : {
          rankLost: (rank: number, reason: string, left: boolean) => {
            losses.notice(rank, reason, left);
            if (!left) dropPeer?.(rank);
          },
        };
  const owner: RailOwner = {
    uniqueId: options.uniqueId,
    rank: options.rank,
    worldSize: options.worldSize,
    failure,
    scheduler: options.scheduler,
    ...rankLost,
    ...(growth === null ? {} : { growth }),
  };
  // The collective channel first: its Ready says which transport the coordinator runs, which
  // decides what this rank opens next where it chose none.
  const { channel: collective, coordinatorTransport } = await connectCollectiveChannel(address, join(options, null));
  try {
    const transport = agreedTransport(options.rank, { transport: options.transport, chosenBy: options.transportChosenBy }, coordinatorTransport, `${options.host}:${options.port}`);
    if (transport === 'tcp_peer') {
      const { links, sockets, processesOnHost, nativePlane, mesh, hostGroups, communicatorPlanes } = await openMeshLinks(collective, address, options, owner, timeoutMs, losses);
      dropPeer = (rank) => mesh.dropPeer(rank);
      return { transport, collective, links, sockets: [[collective.socket, ...sockets], mesh.sockets], processesOnHost, nativePlane, hostGroups, communicatorPlanes };
    }
    // Every rail at once: the coordinator answers each once every rank has joined it.
    const channels = await settleAll(Array.from({ length: options.rails }, (_, rail) => connectChannel(address, join(options, rail))));
    const rails = channels.map((channel, rail) => new RailClient(channel, owner, rail));
    return {
      transport,
      collective,
      links: new StagedLinks(options.rank, options.worldSize, rails, timeoutMs),
      sockets: [[collective.socket, ...channels.map((channel) => channel.socket)]],
      processesOnHost: stagedProcessesOnHost(options.host, options.worldSize),
      nativePlane: null,
      hostGroups: null,
      communicatorPlanes: null,
    };
  } catch (error) {
    collective.destroy();
    throw error;
  }
}

function join(options: ResolvedSessionOptions, rail: number | null) {
  const { uniqueId, rank, worldSize, timeoutMs, secret, tls } = options;
  return { uniqueId, rank, worldSize, timeoutMs, rail, secret, tls };
}

/** Resolves every connection attempt; if one fails, closes those that succeeded and rethrows. */
async function settleAll(attempts: Promise<FrameChannel>[]): Promise<FrameChannel[]> {
  const settled = await Promise.allSettled(attempts);
  const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  const channels = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  if (failed === undefined) return channels;
  for (const channel of channels) channel.destroy();
  throw failed.reason;
}

/**
 * tcp_peer: bind the peer listeners, publish their endpoints on the collective channel and
 * receive everyone's, open the control channel, then build the mesh. A mesh that cannot be built
 * is announced on the control channel (`rank 1 direct peer mesh setup failed: ...`) so every rank
 * fails fast instead of timing out.
 */
async function openMeshLinks(
  collective: FrameChannel,
  address: ChannelAddress,
  options: ResolvedSessionOptions,
  owner: RailOwner,
  timeoutMs: () => number,
  losses: RankLosses | null,
): Promise<{
  links: MeshLinks;
  mesh: PeerMesh;
  /** Its own sockets beside the mesh's links (the control channel). */
  sockets: Socket[];
  processesOnHost: number;
  nativePlane: NativePlane | null;
  hostGroups: number[][];
  communicatorPlanes: CommunicatorPlaneParts | null;
}> {
  const { uniqueId, rank, worldSize, rails } = options;
  const configuration: PeerEndpointConfiguration =
    options.peerEndpoints ??
    peerEndpointConfigurationFromEnvironment({ variables: peerEndpointVariables(options.settings), rails, jobInterface: collective.socket.localAddress ?? '127.0.0.1' });
  const incoming = new AsyncSink<{ rail: number | null; socket: Socket }>();
  const listeners = await bindPeerListeners(configuration, rails, (rail, socket) => incoming.write({ rail, socket }), options.tls);
  // Rank 0 speaks for the job: the other ranks have its secret, or none as it has none.
  if (rank === 0) for (const server of listeners.servers) warnIfUnauthenticated((server.address() as AddressInfo).address, options.secret, 'direct peer listener');
  // One front for the listeners: the endpoint gather's links go to the gather, the rest to the mesh.
  const { secret, tls, scheduler } = options;
  const accepts = new PeerAccepts(incoming, { rank, worldSize, secret, timeoutMs: Math.min(DEFAULT_HANDSHAKE_TIMEOUT_MS, options.timeoutMs), admission: listeners.admission, scheduler });
  const gather = new GatherLinks({ uniqueId, rank, worldSize, rails, secret, tls, timeoutMs: options.timeoutMs, scheduler }, accepts);
  let control: RailClient | null = null;
  try {
    const { own, successor } = await exchangeEndpoints(collective, listeners.endpoints, options);
    const controlChannel = await connectChannel(address, join(options, 0));
    control = new RailClient(controlChannel, owner, 0);
    let mesh: PeerMesh;
    let table: Pick<EndpointTable, 'endpoints' | 'dataPlanes'>;
    try {
      // The ranks complete the table among themselves; a failure of the job (a rank lost) ends it.
      const entries = await gather.table(own, successor, owner.failure.ended$);
      table = { endpoints: entries.map((entry) => [...entry.endpoints]), dataPlanes: entries.map((entry) => entry.dataPlane) };
      // Decided alike on every rank, before a link is dialled.
      const dataLinks = usesNativeDataPlane(table.dataPlanes);
      mesh = await PeerMesh.connect({
        identity: { uniqueId, rank, worldSize, rails, dataLinks },
        endpoints: table.endpoints,
        incoming: accepts,
        timeoutMs: options.timeoutMs,
        scheduler,
        unmatchedBytesLimit: options.unmatchedBytesLimit,
        secret,
        tls,
        admission: listeners.admission,
        // Links on demand: a pair connects when a schedule or a message first needs it; the
        // listeners stay open (unreferenced: they hold no process alive) until the mesh closes.
        onDemand: {
          closeListeners: () => {
            incoming.end();
            closeListeners(listeners.servers);
          },
        },
      });
      for (const server of listeners.servers) server.unref();
    } catch (error) {
      control.abort(`rank ${rank} direct peer mesh setup failed: ${error instanceof Error ? error.message : String(error)}`);
      throw error;
    }
    const processesOnHost = meshProcessesOnHost(table.endpoints, rank);
    mesh.failureHandler = (error) => owner.failure.fail(error);
    if (losses !== null) mesh.departureHandler = (peer) => losses.suspect(peer, 'its direct peer links closed');
    const sockets = mesh.dataLinks;
    const groups = hostGroups(table.endpoints);
    // The peers this rank's table puts on its host: every rank reads the same table, so both ends of
    // a link agree on whether it starts with the single-copy agreement.
    const sameHost = groups.find((group) => group.includes(rank))!.filter((peer) => peer !== rank);
    // The spin is this host's to decide: with more of the job's processes than CPUs, a waiting rank's spin keeps its peer off a core.
    const planeSettings = { spin: planeSpinMicros(options.spin, options.oversubscribedSpin, processesOnHost), inline: options.inline, sameHost, singleCopy: options.singleCopy !== 'off', sharedMemory: options.sharedMemory !== 'off', owner: planeOwner(uniqueId, rank) };
    // Communicators open data links of their own, listening where the world's listeners did (port 0).
    const communicatorPlanes: CommunicatorPlaneParts | null =
      sockets === null
        ? null
        : {
            configuration: { ...configuration, listenAddresses: configuration.listenAddresses.map((address) => ({ ...address, port: 0 })) },
            rails,
            uniqueId,
            secret: options.secret,
            timeoutMs: options.timeoutMs,
            scheduler: options.scheduler,
            unmatchedBytesLimit: options.unmatchedBytesLimit,
            spin: planeSettings.spin,
            inline: options.inline,
            singleCopy: planeSettings.singleCopy,
            sharedMemory: planeSettings.sharedMemory,
            owner: planeSettings.owner,
            worldEndpoints: table.endpoints,
          };
    return {
      links: new MeshLinks(mesh, control, owner.failure, timeoutMs, losses === null ? null : (peer) => losses.needed(peer, 'its direct peer links closed while this rank needed it')),
      mesh,
      sockets: [controlChannel.socket],
      processesOnHost,
      hostGroups: groups,
      nativePlane:
        sockets === null ? null : addonPlane(onDemandPlane(nativeEngine(), mesh, planeSettings), rank, worldSize),
      communicatorPlanes,
    };
  } catch (error) {
    control?.close();
    accepts.close();
    incoming.end();
    closeListeners(listeners.servers);
    throw error;
  } finally {
    // The table is complete (or abandoned): every peer has it, and later gather dialers are strays.
    gather.close(new ChannelClosedError(`rank ${rank} ended its direct peer set-up`));
  }
}

/**
 * Publishes this rank's endpoints, its data-plane offer and its choice settings that are not the
 * defaults, and returns what the coordinator answers: this rank's entry (an unspecified address
 * replaced by the one it sees) and its ring successor's (revision 14). Where two ranks' choice
 * settings differ, the coordinator answers every rank with those two ranks' entries instead, and
 * this rank fails naming the first setting that differs, as every rank does (revision 18).
 */
async function exchangeEndpoints(
  collective: FrameChannel,
  listening: readonly SocketAddressText[],
  options: ResolvedSessionOptions,
): Promise<{ own: RankEndpoints; successor: RankEndpoints }> {
  const { uniqueId, rank, worldSize, rails, timeoutMs, tuning } = options;
  const defaults = choiceDefaults(worldSize, rails);
  const choice = formatChoiceSettings(publishedChoiceSettings(tuning, profileValue(tuning), defaults)) ?? undefined;
  collective.send(outgoing(peerEndpointFrame({ uniqueId, rank, worldSize }, rails, formatRankEndpoints(listening, dataPlaneOffer(options.dataPlane), choice))));
  const response = await firstFrame(collective, {
    timeoutMs,
    scheduler: options.scheduler,
    timedOut: () => new TimeoutError(`rank ${rank} waiting for the direct peer endpoint table`),
    closed: () => new ConfigurationError('coordinator closed before returning direct peer endpoints'),
  });
  validateResponse(response, uniqueId, rank, worldSize, 0n);
  const read = (first: number) => readEndpointEntries(response, { uniqueId, worldSize, rails }, { source: 0, destination: rank, first, count: Math.min(worldSize, 2) }, 'the coordinator');
  // Two ranks' entries whose choice settings differ: the coordinator's word that they would choose apart.
  const first = response.header.rootRank;
  const [own, successor = own] = first < worldSize ? read(first) : read(rank);
  if (own!.choice !== successor.choice) throw choiceSettingsDiffer(first, own!.choice, (first + 1) % worldSize, successor.choice, defaults);
  // Any other run must be this rank's own (read again for the refusal that names it).
  if (first !== rank) read(rank);
  return { own: own!, successor };
}

/** The addon's data-plane engine (resolving `dataPlane: 'native'` checked that it loads). */
function nativeEngine(): DataPlaneEngine {
  const engine = dataPlaneEngine();
  if (engine === null) throw new ConfigurationError('the native data plane needs the native addon, which does not load here');
  return engine;
}

function closeListeners(servers: readonly Server[]): void {
  for (const server of servers) server.close();
}

