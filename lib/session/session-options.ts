import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { type CollectiveTuning, resolveTuning, type TuningOptions } from '../collectives/tuning.js';
import { ConfigurationError } from '../errors.js';
import { resolveFaultTolerance } from '../transport/fault-tolerance.js';
import { UniqueId } from '../protocol/unique-id.js';
import { type BusyPollSetting, resolveBusyPoll } from './busy-poll.js';
import {
  parseIpAddress,
  parseRailIpAddresses,
  parseRailSocketAddresses,
  parseSocketAddress,
  type PeerEndpointConfiguration,
  validatePeerEndpointConfiguration,
} from '../transport/peer-endpoint-config.js';
import { type JobSecret, resolveSecret } from '../transport/job-secret.js';
import { DEFAULT_UNMATCHED_BYTES_LIMIT } from '../transport/peer-mesh.js';
import { resolveDataPlane, resolveSharedMemory, resolveSingleCopy } from './data-plane-setting.js';
import { MAX_INLINE_MICROS, MAX_SPIN_MICROS, type MicrosSetting, resolveMicros } from '../settings/micros-setting.js';
import type { DataPlaneSetting, SharedMemorySetting, SingleCopySetting } from '../settings/plane-settings.js';
import { optionOrSetting } from '../settings/option-or-setting.js';
import { type Environment, type Settings, settingsOf } from '../settings/read-settings.js';
import { secretVariables, tlsVariables } from '../settings/setting-parts.js';
import { resolveTls, type TlsOptions, type TlsSettings } from '../transport/tls-settings.js';
import { type CollectiveTransport, resolveTransport, validateRails, validateTimeout } from '../transport/transport-kind.js';

export const DEFAULT_SESSION_TIMEOUT_MS = 300_000;

/** What `openSession` takes (the public contract's `SessionOptions`). */
export interface SessionOptions extends TuningOptions {
  /** `'host:port'` of the coordinator. */
  coordinator: string;
  uniqueId: UniqueId | string;
  rank: number;
  worldSize: number;
  /**
   * Connecting, and each point-to-point send or receive until `session.setTimeout(ms)` (the
   * reference design's session timeout; collectives wait `collectiveTimeoutMs`). Default 300 s.
   */
  timeoutMs?: number;
  /**
   * How long a collective waits for its peers before it fails naming those missing, on every
   * transport and plane: the coordinator's routing, mesh agreements, the JS plane's receives, the
   * native plane, communicators' leaders. Default `GX1_COLLECTIVE_TIMEOUT_MS` (`rxccl launch
   * --collective-timeout` sets it), else `timeoutMs`; `session.setTimeout(ms)` changes it on every rank.
   */
  collectiveTimeoutMs?: number;
  /** Point-to-point rails, 1..64; default `GX1_P2P_RAILS`, else 1. */
  rails?: number;
  /** Default `GX1_COLLECTIVE_TRANSPORT`, else tcp_peer (`DEFAULT_TRANSPORT`). */
  transport?: CollectiveTransport | string;
  /**
   * Where the session's timers run (response and receive timeouts). Tests pass a virtual-time
   * scheduler to check timeouts exactly; the default is RxJS's `asyncScheduler`.
   */
  scheduler?: SchedulerLike;
  /**
   * tcp_peer only: where this rank listens for its peers and what it tells them to dial, one
   * shared value or one per rail (as `GX1_P2P_LISTEN_ADDR` / `GX1_P2P_RAIL_LISTEN_ADDRS` and
   * `GX1_P2P_ADVERTISE_ADDR` / `GX1_P2P_RAIL_ADVERTISE_ADDRS`, which apply when this is absent).
   */
  peerEndpoints?: { listen?: string | readonly string[]; advertise?: string | readonly string[] };
  /**
   * tcp_peer only: the bytes of messages nobody has posted a receive for yet that one peer may
   * park at this rank, per rail, before the session fails naming that peer, its tags and this
   * limit (the mesh reads every link all the time, so unmatched data is held in memory rather
   * than left in the socket). Default `GX1_P2P_UNMATCHED_BYTES`, else 1 GiB.
   */
  unmatchedBytesLimit?: number;
  /**
   * The job's secret (default `GX1_SECRET`, else `GX1_SECRET_FILE`): every connection of this rank
   * proves it knows it, and goes on only with a side that proves the same (docs/protocol.md 8.4).
   */
  secret?: string | Uint8Array;
  /**
   * TLS for every connection of this rank (default `GX1_TLS_CERT`, `GX1_TLS_KEY`, `GX1_TLS_CA`):
   * PEM certificate and key, and the CA that must have signed the other side's (mutual TLS).
   */
  tls?: TlsOptions;
  /**
   * Microseconds this rank keeps polling its sockets after an operation starts, instead of
   * letting its event loop sleep: a small collective's answers are then seen without a wake-up.
   * `auto` (default `GX1_BUSY_POLL_US`, else auto): 50 where this host has a core for every
   * process of the job, else 0. 0..100000.
   */
  busyPollMicros?: number | 'auto';
  /**
   * tcp_peer: who moves collective data (default `GX1_DATA_PLANE`, else `auto`): `native`, the
   * addon's data plane (a C++ thread over data links of its own, no TLS), `js`, the event loop
   * over the mesh, or `auto`: native where every rank offers it (the addon loads, no TLS, not `js`).
   * Every rank of a job must end up with the same.
   */
  dataPlane?: DataPlaneSetting;
  /**
   * The job survives losing a rank (default `GX1_FAULT_TOLERANT`, else false; the same on every
   * rank and the coordinator): see `shrink()`. Its world runs on the native data plane as any job's
   * (a lost rank fails the world's collective with `RankLostError`); communicators, a shrunk one
   * included, run on the JS plane.
   */
  faultTolerant?: boolean;
  /**
   * This process joins a fault-tolerant job that already runs (default `GX1_JOIN`, else false):
   * `openSession` waits until the job's ranks admit it (`grow()`, docs/protocol.md 13.9) and
   * returns its session of the grown job. Only `coordinator`, `uniqueId` and the job's secret and
   * TLS name the job; `rank` and `worldSize` come with the admission (given ones are ignored).
   */
  join?: boolean;
  /**
   * The native data plane: how long a wait for a peer spins before it sleeps (default
   * `GX1_SPIN_US`, else `auto`). A spinning rank sees a small collective's data at once, but a
   * rank whose peer is late every call burns the spin for nothing. `auto`: up to 20 ms, halved
   * (down to 50) by waits of 5 ms or more that keep coming (within 16 waits of each other) and
   * doubled back by a wait just past it; where the job's processes on this host outnumber its CPUs,
   * `GX1_OVERSUBSCRIBED_SPIN_US` instead (default 0: a waiting rank gives its core to the peer it
   * waits for); a number spins that long after every progress, 0 never.
   * 0..100000.
   */
  spinMicros?: number | 'auto';
  /**
   * The native data plane: how long a small collective (64 KiB or less) runs on the calling
   * thread, spinning for its peers, before the engine's thread takes it (default `GX1_INLINE_US`,
   * else `auto`: 1000). One done within it completes before the call returns, without a thread
   * hand-off (31 us in bench/per-call); the event loop is held meanwhile: timers, heartbeats and socket reads
   * wait up to that long. 0 hands every collective to the engine's thread (the event loop never
   * held). 0..100000.
   */
  inlineMicros?: number | 'auto';
  /**
   * The native data plane on one host (default `GX1_SINGLE_COPY`, else `auto`): `auto` lets a peer
   * of this host read this rank's large payloads (256 KiB or more) straight from its memory, and
   * this rank read theirs, where both ends agree and the system allows it (Linux cross memory
   * attach); `off` sends every payload over the links. Ranks may differ.
   */
  singleCopy?: SingleCopySetting;
  /**
   * The native data plane on one host (default `GX1_SHARED_MEMORY`, else `auto`): `auto` moves every
   * message's header, and its payload (in fragments of 8 KiB; but a payload single copy carries), through
   * a ring the two ends of a link share in memory, where both ends agree and the system allows it (docs/architecture.md, "Shared
   * memory on one host"); `off` keeps this rank's links on TCP. Ranks may differ.
   */
  sharedMemory?: SharedMemorySetting;
}

export interface ResolvedSessionOptions {
  /** The settings the options were resolved over: what the session reads later (`GX1_P2P_*_ADDR`, `GX1_TOPOLOGY_PROBE_*`). */
  readonly settings: Settings;
  readonly host: string;
  readonly port: number;
  readonly uniqueId: UniqueId;
  readonly rank: number;
  readonly worldSize: number;
  readonly timeoutMs: number;
  readonly collectiveTimeoutMs: number;
  readonly rails: number;
  /** The transport asked for; where no setting chose it (`transportChosenBy` null: `resolveTransport`), the coordinator's wins (`agreedTransport`). */
  readonly transport: CollectiveTransport;
  readonly transportChosenBy: string | null;
  readonly peerEndpoints: PeerEndpointConfiguration | null;
  readonly unmatchedBytesLimit: number;
  readonly secret: JobSecret | null;
  readonly tls: TlsSettings | null;
  readonly tuning: CollectiveTuning;
  readonly scheduler: SchedulerLike;
  readonly busyPoll: BusyPollSetting;
  readonly dataPlane: DataPlaneSetting;
  readonly spin: MicrosSetting;
  /** `GX1_OVERSUBSCRIBED_SPIN_US`: the spin `auto` means where the job's processes on this host outnumber its CPUs (./plane-spin.ts). */
  readonly oversubscribedSpin: MicrosSetting;
  readonly inline: MicrosSetting;
  readonly singleCopy: SingleCopySetting;
  readonly sharedMemory: SharedMemorySetting;
  readonly faultTolerant: boolean;
}

/** Splits `host:port` (IPv6 as `[::1]:port`). */
export function parseHostPort(value: string, name = 'coordinator'): { host: string; port: number } {
  const match = /^\s*(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})\s*$/.exec(value);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port < 1 || port > 65535) {
    throw new ConfigurationError(`${name} must be host:port with a port in 1..65535, got ${JSON.stringify(value)}`);
  }
  return { host: match[1] ?? match[2]!, port };
}

/**
 * Checks the options; what they leave out comes from the settings (`env`: settings, or an
 * environment read into them; default this process's, read once) where a variable is set
 * (`GX1_P2P_RAILS`, `GX1_COLLECTIVE_TRANSPORT`, `GX1_COLLECTIVE_TIMEOUT_MS`, `GX1_P2P_UNMATCHED_BYTES`, `GX1_SECRET` /
 * `GX1_SECRET_FILE`, `GX1_TLS_*`, `GX1_BUSY_POLL_US`, `GX1_DATA_PLANE`, `GX1_SPIN_US`, `GX1_INLINE_US`, `GX1_SINGLE_COPY`, `GX1_SHARED_MEMORY`, `GX1_FAULT_TOLERANT`, the tuning
 * variables), else the default. An option always wins over its variable, which is then not read.
 */
export function resolveSessionOptions(options: SessionOptions, env: Settings | Environment = process.env): ResolvedSessionOptions {
  const settings = settingsOf(env);
  const { host, port } = parseHostPort(options.coordinator);
  const worldSize = options.worldSize;
  if (!Number.isInteger(worldSize) || worldSize < 1 || !Number.isInteger(options.rank) || options.rank < 0 || options.rank >= worldSize) {
    throw new ConfigurationError(`rank ${options.rank} is outside TCP collective world size ${worldSize}`);
  }
  const rails = optionOrSetting('rails', options.rails, validateRails, settings.GX1_P2P_RAILS);
  const tls = resolveTls(options.tls, tlsVariables(settings));
  const faultTolerant = optionOrSetting('faultTolerant', options.faultTolerant, resolveFaultTolerance, settings.GX1_FAULT_TOLERANT);
  const dataPlane = resolveDataPlane(options.dataPlane, settings.GX1_DATA_PLANE, tls !== null).setting;
  const transport = resolveTransport(options.transport, settings.GX1_COLLECTIVE_TRANSPORT);
  const timeoutMs = validateTimeout(options.timeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS, 'session timeout');
  return {
    settings,
    host,
    port,
    uniqueId: UniqueId.from(options.uniqueId),
    rank: options.rank,
    worldSize,
    timeoutMs,
    // The option, else the variable, else the session timeout: a job that sets only that one bounds its collectives by it.
    collectiveTimeoutMs: options.collectiveTimeoutMs !== undefined
        ? validateTimeout(options.collectiveTimeoutMs, 'collectiveTimeoutMs')
        : (settings.GX1_COLLECTIVE_TIMEOUT_MS.value ?? timeoutMs),
    rails,
    transport: transport.transport,
    transportChosenBy: transport.chosenBy,
    peerEndpoints: options.peerEndpoints === undefined ? null : peerEndpointOptions(options.peerEndpoints, rails),
    unmatchedBytesLimit: resolveUnmatchedBytesLimit(options.unmatchedBytesLimit, settings),
    secret: resolveSecret(options.secret, secretVariables(settings)),
    tls,
    tuning: resolveTuning(options, worldSize, settings, rails),
    scheduler: options.scheduler ?? asyncScheduler,
    busyPoll: resolveBusyPoll(options.busyPollMicros, settings.GX1_BUSY_POLL_US),
    dataPlane,
    faultTolerant,
    spin: resolveMicros(options.spinMicros, 'spinMicros', settings.GX1_SPIN_US, MAX_SPIN_MICROS),
    oversubscribedSpin: settings.GX1_OVERSUBSCRIBED_SPIN_US.value,
    inline: resolveMicros(options.inlineMicros, 'inlineMicros', settings.GX1_INLINE_US, MAX_INLINE_MICROS),
    singleCopy: resolveSingleCopy(options.singleCopy, settings.GX1_SINGLE_COPY),
    sharedMemory: resolveSharedMemory(options.sharedMemory, settings.GX1_SHARED_MEMORY),
  };
}

function peerEndpointOptions(options: NonNullable<SessionOptions['peerEndpoints']>, rails: number): PeerEndpointConfiguration {
  const { listen, advertise } = options;
  const configuration: PeerEndpointConfiguration = {
    listenAddresses:
      listen === undefined
        ? [{ host: '0.0.0.0', port: 0 }]
        : typeof listen === 'string'
          ? [parseSocketAddress('peerEndpoints.listen', listen)]
          : parseRailSocketAddresses('peerEndpoints.listen', listen.join(','), rails),
    advertiseAddresses:
      advertise === undefined
        ? []
        : typeof advertise === 'string'
          ? [parseIpAddress('peerEndpoints.advertise', advertise)]
          : parseRailIpAddresses('peerEndpoints.advertise', advertise.join(','), rails),
  };
  validatePeerEndpointConfiguration(configuration, rails);
  return configuration;
}

/** `unmatchedBytesLimit` wins over `GX1_P2P_UNMATCHED_BYTES`, else the default; each must be a positive integer, and names itself if not. */
function resolveUnmatchedBytesLimit(option: number | undefined, settings: Settings): number {
  if (option === undefined) return settings.GX1_P2P_UNMATCHED_BYTES.value ?? DEFAULT_UNMATCHED_BYTES_LIMIT;
  if (!Number.isSafeInteger(option) || option < 1) {
    throw new ConfigurationError(`unmatchedBytesLimit must be a positive integer number of bytes, got ${String(option)}`);
  }
  return option;
}
