import type { Socket } from 'node:net';
import { AsyncSink } from 'ix/asynciterable';
import { firstValueFrom, take, timeout } from 'rxjs';
import { ConfigurationError, RemoteAbortError, TimeoutError } from '../errors.js';
import { ElementType } from '../protocol/element-type.js';
import { frameText, makeHeader } from '../protocol/frame.js';
import { Opcode } from '../protocol/opcode.js';
import { type ChannelAddress, connectChannel } from '../transport/connect-channel.js';
import type { FrameChannel } from '../transport/frame-channel.js';
import {
  bindPeerListeners,
  formatRankEndpoints,
  parseEndpointTable,
  type PeerEndpointConfiguration,
  peerEndpointConfigurationFromEnvironment,
} from '../transport/peer-endpoint-config.js';
import { PeerMesh } from '../transport/peer-mesh.js';
import { validateResponse } from '../transport/validate-response.js';
import { PeerDataPlane } from './data-plane.js';
import { P2pClient } from './p2p-client.js';
import type { SessionFailure } from './session-failure.js';
import type { ResolvedSessionOptions } from './session-options.js';

/**
 * Opens the tcp_peer data plane (the reference design's tcp_peer branch of
 * `connect_with_transport_configuration`): bind the peer listeners, publish their endpoints on the
 * collective channel and receive everyone's, open the control channel, then build the mesh. A mesh
 * that cannot be built is announced on the control channel (`rank 1 direct peer mesh setup
 * failed: ...`) so every rank fails fast instead of timing out.
 */
export async function openPeerPlane(
  collective: FrameChannel,
  address: ChannelAddress,
  options: ResolvedSessionOptions,
  failure: SessionFailure,
): Promise<PeerDataPlane> {
  const { uniqueId, rank, worldSize, rails, timeoutMs } = options;
  const configuration: PeerEndpointConfiguration =
    options.peerEndpoints ??
    peerEndpointConfigurationFromEnvironment({ rails, controlLocalAddressFamily: collective.socket.localFamily === 'IPv6' ? 'IPv6' : 'IPv4' });
  const incoming = new AsyncSink<{ rail: number | null; socket: Socket }>();
  const listeners = await bindPeerListeners(configuration, rails, (rail, socket) => incoming.write({ rail, socket }));
  let control: P2pClient | null = null;
  try {
    const table = await exchangeEndpoints(collective, formatRankEndpoints(listeners.endpoints), options);
    const controlChannel = await connectChannel(address, { uniqueId, rank, worldSize, rail: 0, timeoutMs });
    control = new P2pClient(controlChannel, uniqueId, rank, worldSize, 0, failure);
    let mesh: PeerMesh;
    try {
      mesh = await PeerMesh.connect({ identity: { uniqueId, rank, worldSize, rails }, endpoints: table, incoming, timeoutMs });
    } catch (error) {
      control.abort(`rank ${rank} direct peer mesh setup failed: ${error instanceof Error ? error.message : String(error)}`);
      throw error;
    }
    mesh.failureHandler = (error) => failure.fail(error);
    return new PeerDataPlane(mesh, control);
  } catch (error) {
    control?.close();
    throw error;
  } finally {
    // The mesh is complete (or abandoned): later dialers are strays.
    incoming.end();
    for (const server of listeners.servers) server.close();
  }
}

/** Publishes this rank's endpoints and returns everyone's, `table[rank][rail]`. */
async function exchangeEndpoints(collective: FrameChannel, endpoints: string, options: ResolvedSessionOptions) {
  const { uniqueId, rank, worldSize, rails, timeoutMs } = options;
  const payload = new Uint8Array(Buffer.from(endpoints, 'utf8'));
  collective.send({
    header: makeHeader(
      { uniqueId, opcode: Opcode.PeerEndpoint, elementType: ElementType.U8, sourceRank: rank, worldSize, tag: BigInt(rails), elementCount: payload.length },
      payload.length,
    ),
    parts: [payload],
  });
  const response = await firstValueFrom(collective.frames$.pipe(take(1), timeout(timeoutMs))).catch((error: unknown) => {
    if (error instanceof Error && error.name === 'TimeoutError') throw new TimeoutError(`rank ${rank} waiting for the direct peer endpoint table`);
    if (error instanceof Error && error.name === 'EmptyError') throw new ConfigurationError('coordinator closed before returning direct peer endpoints');
    throw error;
  });
  if (response.header.opcode === Opcode.Abort) throw new RemoteAbortError(frameText(response));
  validateResponse(response, uniqueId, rank, worldSize, 0n);
  const h = response.header;
  if (h.opcode !== Opcode.PeerEndpoint || h.elementType !== ElementType.U8 || h.tag !== BigInt(rails) || h.elementCount !== response.payload.length) {
    throw new ConfigurationError('coordinator returned an invalid direct peer endpoint table');
  }
  return parseEndpointTable(frameText(response), worldSize, rails);
}
