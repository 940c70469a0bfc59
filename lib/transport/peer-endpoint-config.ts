import { type AddressInfo, isIP, SocketAddress, type Server, type Socket } from 'node:net';
import { ConfigurationError } from '../errors.js';
import { CHOICE_ATTRIBUTE, readChoiceSettings } from './choice-attribute.js';
import { Admission, ADMISSION_GRACE_MS } from './admission.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS, MAX_UNAUTHENTICATED_CONNECTIONS } from './handshake.js';
import { createListener, type TlsSettings } from './tls-settings.js';
import { validateRails } from './transport-kind.js';

/**
 * Where a rank listens for direct peer connections and what it tells its peers to dial, per
 * point-to-point rail (the reference's `PeerEndpointConfiguration`). One shared listener serves
 * every rail unless the deployment gives each rail its own address, e.g. one NIC per rail:
 *
 *   (nothing)                                             one listener on the job's interface
 *   GX1_P2P_LISTEN_ADDR=0.0.0.0:0                         one listener for all rails, every interface
 *   GX1_P2P_RAIL_LISTEN_ADDRS=10.0.0.5:0,10.1.0.5:0        one listener per rail
 *   GX1_P2P_ADVERTISE_ADDR=10.0.0.5                        the address peers dial (behind NAT ...)
 *   GX1_P2P_RAIL_ADVERTISE_ADDRS=10.0.0.5,10.1.0.5         ... per rail
 */

/** An IP address (no brackets, canonical form) and a port: what `net.connect` takes. */
export interface SocketAddressText {
  readonly host: string;
  readonly port: number;
}

export interface PeerEndpointConfiguration {
  /** One shared address, or one per rail. Port 0 lets the system pick. */
  readonly listenAddresses: readonly SocketAddressText[];
  /** Empty (advertise what was bound), one shared IP address, or one per rail. */
  readonly advertiseAddresses: readonly string[];
}

const SOCKET_ADDRESS_SYNTAX = 'invalid socket address syntax';
const IP_ADDRESS_SYNTAX = 'invalid IP address syntax';

/**
 * The canonical text of an IP literal, or undefined when `text` is none: IPv6 compressed and
 * lower case as Rust prints it (so equal addresses compare equal as strings), a zone id kept.
 */
function canonicalIp(text: string): string | undefined {
  const family = isIP(text);
  if (family === 4) return text;
  if (family !== 6) return undefined;
  const zoneAt = text.indexOf('%');
  const zone = zoneAt < 0 ? '' : text.slice(zoneAt);
  const address = zoneAt < 0 ? text : text.slice(0, zoneAt);
  return new SocketAddress({ address, family: 'ipv6' }).address + zone;
}

/** `a.b.c.d:port` or `[v6]:port`, IP literals only (no host names), as Rust's `SocketAddr` parses. */
function socketAddressOf(text: string): SocketAddressText | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):([0-9]{1,5})$/.exec(text);
  if (match === null) return undefined;
  const [, bracketed, plain, portText] = match;
  const host = bracketed !== undefined ? canonicalIp(bracketed) : canonicalIp(plain!);
  const port = Number(portText);
  if (host === undefined || port > 0xffff) return undefined;
  // Brackets are for IPv6 only, and IPv6 needs them.
  if ((bracketed !== undefined) !== (isIP(host) === 6)) return undefined;
  return { host, port };
}

function isUnspecified(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

/** `a.b.c.d:port`, or `[v6]:port`: the form `parseSocketAddress` and the endpoint tables read. */
export function formatEndpoint(endpoint: SocketAddressText): string {
  const host = isIP(endpoint.host) === 6 ? `[${endpoint.host}]` : endpoint.host;
  return `${host}:${endpoint.port}`;
}

/** Parses the socket address an environment variable `name` holds (surrounding blanks allowed). */
export function parseSocketAddress(name: string, value: string): SocketAddressText {
  const address = socketAddressOf(value.trim());
  if (address === undefined) {
    throw new ConfigurationError(
      `${name} must be a socket address, got ${JSON.stringify(value)}: ${SOCKET_ADDRESS_SYNTAX}`,
    );
  }
  return address;
}

/** Parses the IP address an environment variable `name` holds, returned in canonical form. */
export function parseIpAddress(name: string, value: string): string {
  const address = canonicalIp(value.trim());
  if (address === undefined) {
    throw new ConfigurationError(
      `${name} must be an IP address, got ${JSON.stringify(value)}: ${IP_ADDRESS_SYNTAX}`,
    );
  }
  return address;
}

function splitPerRail(name: string, value: string, rails: number): string[] {
  const entries = value.split(',');
  if (entries.length !== rails) {
    throw new ConfigurationError(`${name} contains ${entries.length} addresses, expected ${rails}`);
  }
  return entries;
}

/** Errors from one rail's entry say which rail, so a long list is easy to fix. */
function perRail<T>(entries: readonly string[], parse: (entry: string) => T): T[] {
  return entries.map((entry, rail) => {
    try {
      return parse(entry);
    } catch (error) {
      throw new ConfigurationError(`${(error as Error).message} (rail ${rail})`, { cause: error });
    }
  });
}

/** A comma-separated list of exactly `rails` socket addresses, in rail order. */
export function parseRailSocketAddresses(name: string, value: string, rails: number): SocketAddressText[] {
  return perRail(splitPerRail(name, value, rails), (entry) => parseSocketAddress(name, entry));
}

/** A comma-separated list of exactly `rails` IP addresses, in rail order. */
export function parseRailIpAddresses(name: string, value: string, rails: number): string[] {
  return perRail(splitPerRail(name, value, rails), (entry) => parseIpAddress(name, entry));
}


/** Checks that the lists fit `rails`: one shared entry or one per rail (advertise may be empty). */
export function validatePeerEndpointConfiguration(
  configuration: PeerEndpointConfiguration,
  rails: number,
): void {
  validateRails(rails);
  const listen = configuration.listenAddresses.length;
  if (listen !== 1 && listen !== rails) {
    throw new ConfigurationError(
      `direct peer listen configuration contains ${listen} addresses, expected one shared address or ${rails} rail addresses`,
    );
  }
  const advertise = configuration.advertiseAddresses.length;
  if (advertise !== 0 && advertise !== 1 && advertise !== rails) {
    throw new ConfigurationError(
      `direct peer advertise configuration contains ${advertise} addresses, expected zero, one shared address, or ${rails} rail addresses`,
    );
  }
}

/** `GX1_P2P_LISTEN_ADDR`, `GX1_P2P_ADVERTISE_ADDR` and their per-rail forms, as set (the settings' texts). */
export interface PeerEndpointVariables {
  readonly listen: string | undefined;
  readonly advertise: string | undefined;
  readonly railListen: string | undefined;
  readonly railAdvertise: string | undefined;
}

export interface PeerEndpointEnvironmentOptions {
  readonly variables: PeerEndpointVariables;
  readonly rails: number;
  /**
   * The interface the job uses: the local address of the connection to the coordinator. Without
   * configuration the rank listens there (127.0.0.1 in a loopback job), never on every interface,
   * so its peer port is reachable only the way the job itself runs.
   */
  readonly jobInterface: string;
}

/**
 * Reads `GX1_P2P_RAIL_LISTEN_ADDRS` (else `GX1_P2P_LISTEN_ADDR`, else the job's interface, port
 * 0; `GX1_P2P_LISTEN_ADDR=0.0.0.0:0` listens on every interface) and `GX1_P2P_RAIL_ADVERTISE_ADDRS` (else
 * `GX1_P2P_ADVERTISE_ADDR`, else nothing). A per-rail variable wins over its shared one.
 */
export function peerEndpointConfigurationFromEnvironment(
  options: PeerEndpointEnvironmentOptions,
): PeerEndpointConfiguration {
  const { variables, rails, jobInterface } = options;
  validateRails(rails);
  const { railListen, listen: sharedListen, railAdvertise, advertise: sharedAdvertise } = variables;
  const listenAddresses =
    railListen !== undefined
      ? parseRailSocketAddresses('GX1_P2P_RAIL_LISTEN_ADDRS', railListen, rails)
      : sharedListen !== undefined
        ? [parseSocketAddress('GX1_P2P_LISTEN_ADDR', sharedListen)]
        : [{ host: canonicalIp(jobInterface) ?? jobInterface, port: 0 }];
  const advertiseAddresses =
    railAdvertise !== undefined
      ? parseRailIpAddresses('GX1_P2P_RAIL_ADVERTISE_ADDRS', railAdvertise, rails)
      : sharedAdvertise !== undefined
        ? [parseIpAddress('GX1_P2P_ADVERTISE_ADDR', sharedAdvertise)]
        : [];
  const configuration = { listenAddresses, advertiseAddresses };
  validatePeerEndpointConfiguration(configuration, rails);
  return configuration;
}

export interface PeerListeners {
  /** One per configured listen address; the caller owns them (close them, handle 'error'). */
  readonly servers: Server[];
  /** What peers should dial, per rail. */
  readonly endpoints: SocketAddressText[];
  /** Where every listener counts its connections until the mesh says they authenticated. */
  readonly admission: Admission;
}

/**
 * Called for each accepted peer connection: `rail` is the listener's rail, or null when one
 * listener serves every rail (the connecting peer must then say which rail it is).
 */
export type PeerConnectionHandler = (rail: number | null, socket: Socket) => void;

function listen(server: Server, address: SocketAddressText, index: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error): void => {
      reject(
        new ConfigurationError(
          `cannot bind direct peer listener ${index} to ${formatEndpoint(address)}: ${error.message}`,
          { cause: error },
        ),
      );
    };
    server.once('error', failed);
    server.listen({ host: address.host, port: address.port }, () => {
      server.off('error', failed);
      resolve();
    });
  });
}

/**
 * Binds the configured listeners and returns them with the endpoint each rail advertises: the
 * configured advertise address (shared or per rail) if any, else the bound address, with the
 * bound port. An unspecified bound address (0.0.0.0, ::) is advertised as is; the coordinator
 * replaces it with the address it sees the rank connect from.
 *
 * Every connection counts in one admission for all the listeners until the mesh authenticates it
 * (at most `maxUnauthenticatedConnections` at once; admission.ts).
 *
 * With `tls`, each listener speaks TLS (and hands over a connection once its TLS handshake is
 * done). `onConnection` is attached before each server listens, so a peer that dials the moment the
 * endpoints are published is never accepted with nobody to take it. If any bind fails, the
 * listeners already bound are closed before the error is thrown.
 */
export async function bindPeerListeners(
  configuration: PeerEndpointConfiguration,
  rails: number,
  onConnection: PeerConnectionHandler,
  tls: TlsSettings | null = null,
  maxUnauthenticatedConnections = MAX_UNAUTHENTICATED_CONNECTIONS,
): Promise<PeerListeners> {
  validatePeerEndpointConfiguration(configuration, rails);
  const shared = configuration.listenAddresses.length === 1;
  const servers: Server[] = [];
  const admission = new Admission({ cap: maxUnauthenticatedConnections, deadlineMs: DEFAULT_HANDSHAKE_TIMEOUT_MS + ADMISSION_GRACE_MS });
  try {
    for (const [index, address] of configuration.listenAddresses.entries()) {
      const server = createListener(tls, DEFAULT_HANDSHAKE_TIMEOUT_MS, admission, (socket: Socket) => onConnection(shared ? null : index, socket));
      servers.push(server);
      await listen(server, address, index);
    }
  } catch (error) {
    await Promise.all(servers.map((server) => new Promise<void>((done) => server.close(() => done()))));
    throw error;
  }
  const bound = servers.map((server) => {
    // A listening TCP server always has an AddressInfo (a string is a pipe, null not listening).
    const local = server.address() as AddressInfo;
    return { host: canonicalIp(local.address) ?? local.address, port: local.port };
  });
  const advertise = configuration.advertiseAddresses;
  const endpoints = Array.from({ length: rails }, (_, rail) => {
    const local = bound[shared ? 0 : rail]!;
    const host = advertise.length === 0 ? local.host : advertise[advertise.length === 1 ? 0 : rail]!;
    return { host, port: local.port };
  });
  return { servers, endpoints, admission };
}

function endpointsEqual(left: SocketAddressText, right: SocketAddressText): boolean {
  return left.host === right.host && left.port === right.port;
}

/** Whether every rail of a rank uses the same endpoint (one shared listener, one advertise). */
function usesSharedEndpoint(endpoints: readonly SocketAddressText[]): boolean {
  return endpoints.every((endpoint) => endpointsEqual(endpoint, endpoints[0]!));
}

/**
 * What a rank offers beyond its endpoints: the native data plane (docs/protocol.md 8.3, 9.9), as
 * `auto` (it runs the plane where the job decides for it) or `native` (it asks for it). A rank that
 * offers nothing (GX1_DATA_PLANE=js, TLS, no addon, another GX1 implementation) runs the JS plane,
 * and so does the whole job with it.
 */
export type DataPlaneOffer = 'auto' | 'native';

const DATA_PLANE_ATTRIBUTE = 'data-plane=';

/** A rank's entry in the endpoint table: an endpoint per rail, its data-plane offer, and its choice settings. */
export interface RankEndpoints {
  readonly endpoints: readonly SocketAddressText[];
  readonly dataPlane: DataPlaneOffer | null;
  /**
   * The settings by which it chooses its collectives' algorithms, as its `choice=` attribute
   * carries them (./choice-attribute.ts); absent where they are the defaults. The coordinator
   * compares them and answers without them (docs/protocol.md 8.3, step 3).
   */
  readonly choice?: string;
}

/** The table every rank gets: `endpoints[rank][rail]`, and each rank's offer (and choice settings, in a run that names two ranks' that differ). */
export interface EndpointTable {
  readonly endpoints: SocketAddressText[][];
  readonly dataPlanes: (DataPlaneOffer | null)[];
  readonly choices: (string | undefined)[];
}

/** A rank's first line carries its offer, then its choice settings, each after a space. */
function withAttributes(line: string, { dataPlane, choice }: Omit<RankEndpoints, 'endpoints'>): string {
  return `${line}${dataPlane === null ? '' : ` ${DATA_PLANE_ATTRIBUTE}${dataPlane}`}${choice === undefined ? '' : ` ${CHOICE_ATTRIBUTE}${choice}`}`;
}

/** One line of a publication or table: the endpoint, and the offer and choice settings where the line may carry them. */
function readLine(line: string, first: boolean, where: string): { endpoint: SocketAddressText | undefined; offer: DataPlaneOffer | null; choice?: string } {
  const [address = '', ...attributes] = line.split(' ');
  let offer: DataPlaneOffer | null = null;
  let choice: string | undefined;
  const refuse = (attribute: string) =>
    new ConfigurationError(
      `${where} ${JSON.stringify(line)} has an attribute it cannot carry: ${JSON.stringify(attribute)} (only a rank's first line may carry data-plane=auto or data-plane=native, then choice=...)`,
    );
  for (const attribute of attributes) {
    if (!first || choice !== undefined) throw refuse(attribute);
    if (attribute.startsWith(CHOICE_ATTRIBUTE)) {
      choice = attribute.slice(CHOICE_ATTRIBUTE.length);
      readLineChoice(choice, where, line);
      continue;
    }
    const value = attribute.startsWith(DATA_PLANE_ATTRIBUTE) ? attribute.slice(DATA_PLANE_ATTRIBUTE.length) : undefined;
    if (offer !== null || (value !== 'auto' && value !== 'native')) throw refuse(attribute);
    offer = value;
  }
  return { endpoint: socketAddressOf(address), offer, ...(choice === undefined ? {} : { choice }) };
}

/** A line's choice settings must read back (the coordinator compares them as text, a rank reads the two that differ). */
function readLineChoice(choice: string, where: string, line: string): void {
  try {
    readChoiceSettings(choice);
  } catch (error) {
    throw new ConfigurationError(`${where} ${JSON.stringify(line)}: ${(error as Error).message}`);
  }
}

/**
 * A rank's own endpoints as it publishes them to the coordinator: one line when every rail
 * shares one endpoint, else one line per rail; the first carries its data-plane offer.
 */
export function formatRankEndpoints(endpoints: readonly SocketAddressText[], dataPlane: DataPlaneOffer | null = null, choice?: string): string {
  const published = usesSharedEndpoint(endpoints) ? endpoints.slice(0, 1) : endpoints;
  const attributes = { dataPlane, ...(choice === undefined ? {} : { choice }) };
  return published.map((endpoint, line) => (line === 0 ? withAttributes(formatEndpoint(endpoint), attributes) : formatEndpoint(endpoint))).join('\n');
}

/**
 * What the coordinator makes of rank `rank`'s publication: one shared line or `rails` lines, no
 * port zero, an unspecified address replaced by `peerHost`, the address the rank's control
 * connection came from; one endpoint per rail, and the rank's offer.
 */
export function readRankPublication(text: string, rank: number, rails: number, peerHost: string): RankEndpoints {
  const entries = lines(text);
  if (entries.length !== 1 && entries.length !== rails) {
    throw new ConfigurationError(
      `rank ${rank} published ${entries.length} direct peer endpoints, expected one shared endpoint or ${rails} rail endpoints`,
    );
  }
  let firstLine: Omit<RankEndpoints, 'endpoints'> = { dataPlane: null };
  const endpoints = entries.map((entry, rail) => {
    const { endpoint, offer, choice } = readLine(entry, rail === 0, `rank ${rank} direct peer endpoint line`);
    if (rail === 0) firstLine = { dataPlane: offer, ...(choice === undefined ? {} : { choice }) };
    if (endpoint === undefined) {
      throw new ConfigurationError(
        `rank ${rank} direct peer endpoint ${JSON.stringify(entry)} for rail ${rail} is invalid: ${SOCKET_ADDRESS_SYNTAX}`,
      );
    }
    if (endpoint.port === 0) {
      throw new ConfigurationError(`rank ${rank} direct peer endpoint for rail ${rail} uses port zero`);
    }
    if (!isUnspecified(endpoint.host)) return endpoint;
    return { host: canonicalIp(peerHost) ?? peerHost, port: endpoint.port };
  });
  return { endpoints: endpoints.length === 1 ? Array.from({ length: rails }, () => endpoints[0]!) : endpoints, ...firstLine };
}

/** `readRankPublication`'s endpoints alone. */
export function parseRankEndpoints(text: string, rank: number, rails: number, peerHost: string): SocketAddressText[] {
  return [...readRankPublication(text, rank, rails, peerHost).endpoints];
}

/**
 * The table the coordinator returns to every rank. While every rank uses one shared endpoint it
 * keeps the original one-line-per-rank layout, so deployments with a scalar GX1_P2P_LISTEN_ADDR
 * keep their wire form; otherwise it lists every rank's rails in turn. Each rank's first line
 * carries its offer.
 */
export function formatEndpointTable(table: readonly (RankEndpoints | readonly SocketAddressText[])[]): string {
  const entries = table.map((entry): RankEndpoints => ('endpoints' in entry ? entry : { endpoints: entry, dataPlane: null }));
  const compact = entries.every((entry) => usesSharedEndpoint(entry.endpoints));
  return entries
    .flatMap(({ endpoints, ...attributes }) => (compact ? endpoints.slice(0, 1) : endpoints).map((endpoint, line) => (line === 0 ? withAttributes(formatEndpoint(endpoint), attributes) : formatEndpoint(endpoint))))
    .join('\n');
}

/** Reads either layout of `formatEndpointTable` back: every rank's endpoints by rail, and its offer. */
export function readEndpointTable(text: string, worldSize: number, rails: number): EndpointTable {
  const entries = lines(text);
  const perRank = entries.length === worldSize ? 1 : rails;
  if (entries.length !== worldSize && entries.length !== worldSize * rails) {
    throw new ConfigurationError(
      `coordinator returned ${entries.length} direct peer endpoints, expected ${worldSize} shared endpoints or ${worldSize * rails} rail endpoints`,
    );
  }
  const read = entries.map((entry, index) => {
    const { endpoint, offer, choice } = readLine(entry, index % perRank === 0, 'direct peer endpoint');
    if (endpoint === undefined) {
      throw new ConfigurationError(`direct peer endpoint ${JSON.stringify(entry)} is invalid: ${SOCKET_ADDRESS_SYNTAX}`);
    }
    return { endpoint, offer, choice };
  });
  return {
    endpoints: Array.from({ length: worldSize }, (_, rank) => {
      const own = read.slice(rank * perRank, (rank + 1) * perRank).map(({ endpoint }) => endpoint);
      return perRank === 1 ? Array.from({ length: rails }, () => own[0]!) : own;
    }),
    dataPlanes: Array.from({ length: worldSize }, (_, rank) => read[rank * perRank]!.offer),
    choices: Array.from({ length: worldSize }, (_, rank) => read[rank * perRank]!.choice),
  };
}

/** `readEndpointTable`'s endpoints alone, `table[rank][rail]`. */
export function parseEndpointTable(text: string, worldSize: number, rails: number): SocketAddressText[][] {
  return readEndpointTable(text, worldSize, rails).endpoints;
}

/** Lines as Rust's `str::lines` splits them: `\n` or `\r\n`, no empty line after a final break. */
function lines(text: string): string[] {
  if (text === '') return [];
  const parts = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  if (text.endsWith('\n')) parts.pop();
  return parts;
}
