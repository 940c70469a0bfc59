/**
 * What `rxccl doctor` finds, each fact asked of the system, the addon or the environment as a job
 * would ask it (nothing assumed), as one object: `rxccl doctor --json` prints it as it is, and its
 * keys are stable (docs/launch.md, "rxccl doctor", lists them).
 */
import { arch, availableParallelism, cpus, hostname, networkInterfaces, platform, release, totalmem } from 'node:os';
import { seccompMode, type SharedMemoryFilesystem, sharedMemoryFilesystem, transparentHugePages, yamaPtraceScope } from '../diagnostics/linux-settings.js';
import { addonFacts, type AddonFacts } from '../kernels/addon-facts.js';
import { type AddonOrigin, packageRoot } from '../kernels/addon.js';
import { POOLED_RESULT_BYTES } from '../kernels/result-memory.js';
import { discoverJob, hasJobVariables } from '../launch/discover-job.js';
import { type DiscoveredJob, type Environment, hostPort } from '../launch/job-environment.js';
import { unknownVariables } from '../launch/known-variables.js';
import { LOCAL_COORDINATOR_HOST } from '../launch/local-job.js';
import { shownVariables } from '../launch/shown-variables.js';
import { resolveDataPlane } from '../session/data-plane-setting.js';
import type { DataPlaneSetting, SharedMemorySetting, SingleCopySetting } from '../settings/plane-settings.js';
import { effectiveSettings, type Settings, settingsOf } from '../settings/read-settings.js';
import { peerEndpointVariables, tlsVariables } from '../settings/setting-parts.js';
import { parseHostPort } from '../session/session-options.js';
import { singleCopyVerdict } from '../session/single-copy-verdict.js';
import { sharedMemoryVerdict } from '../session/shared-memory-verdict.js';
import { parseRailOrder } from '../topology/link-tuning.js';
import { interfaceHolding, localAddressToward } from '../transport/local-route.js';
import { formatEndpoint, peerEndpointConfigurationFromEnvironment } from '../transport/peer-endpoint-config.js';
import { resolveTls } from '../transport/tls-settings.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import { packageVersion } from './package-version.js';

export interface DoctorReport {
  /** rxccl's version, and the package root it runs from. */
  readonly rxccl: { readonly version: string; readonly root: string };
  readonly node: { readonly version: string; readonly platform: string; readonly arch: string; readonly napi: string };
  readonly host: { readonly hostname: string; readonly cpus: number; readonly availableParallelism: number; readonly cpuModel: string | null; readonly memoryBytes: number };
  readonly kernels: {
    /** The native kernels load; else the job runs the TypeScript reference kernels. */
    readonly native: boolean;
    readonly addon: string | null;
    readonly origin: AddonOrigin | null;
    readonly error: string | null;
    readonly simd: string | null;
    readonly threads: number | null;
  };
  readonly resultPool: { readonly keptBytes: number | null; readonly fromBytes: number; readonly transparentHugePages: string | null };
  readonly dataPlane: { readonly native: boolean; readonly setting: DataPlaneSetting | null; readonly reason: string };
  readonly singleCopy: {
    readonly allowed: boolean | null;
    readonly reason: string;
    readonly setting: SingleCopySetting | null;
    readonly yamaPtraceScope: number | null;
    readonly seccomp: number | null;
    readonly refusal: string | null;
  };
  /**
   * Whether links between ranks of this host may move their messages through shared-memory rings
   * (GX1_SHARED_MEMORY), and why (not): the kernel's release (pidfd_getfd: Linux 5.6), and /dev/shm
   * as it is here, reported because containers often limit it, though the rings, memfds, need it not.
   */
  readonly sharedMemory: {
    readonly allowed: boolean | null;
    readonly reason: string;
    readonly setting: SharedMemorySetting | null;
    readonly kernel: string;
    readonly devShm: SharedMemoryFilesystem | null;
  };
  readonly network: {
    readonly interfaces: readonly { readonly name: string; readonly address: string; readonly family: string; readonly cidr: string | null; readonly internal: boolean }[];
    /** The job this process's variables describe; null where they describe none (or a broken one: see problems). */
    readonly job: {
      readonly launcher: string;
      readonly rank: number;
      readonly worldSize: number;
      readonly localRank: number | null;
      readonly coordinator: string;
      readonly hostsCoordinator: boolean;
    } | null;
    /**
     * How this host reaches the job's coordinator: the address (and interface) its connections there
     * leave from, where a rank's peer listener binds by default. Without a job, the coordinator
     * GX1_COORDINATOR or GX1_COORDINATOR_HOST names, else `rxccl launch`'s on loopback.
     */
    readonly route: { readonly toward: string; readonly address: string | null; readonly interface: string | null; readonly error: string | null };
    readonly transport: CollectiveTransport | null;
    readonly rails: number | null;
    /** `auto`, or the rails in the order collectives take them. */
    readonly railOrder: string | null;
    /** Where a rank's peer listeners bind (port 0: chosen at start), one shared or one per rail. */
    readonly listen: readonly string[];
    /** What a rank tells its peers to dial, where set; empty: what it bound. */
    readonly advertise: readonly string[];
  };
  /** The GX1_* and RXCCL_* variables of this process, secrets masked. */
  readonly environment: Readonly<Record<string, string>>;
  /**
   * Every GX1_* variable of the settings table (lib/settings/settings-table.ts) with its effective
   * value and where it came from: this environment (secrets masked), or the default (value null;
   * README.md's tables give it). A job's options win over both (`options`: the ones that would).
   */
  readonly settings: readonly { readonly variable: string; readonly value: string | null; readonly source: 'environment' | 'default'; readonly options: readonly string[] }[];
  readonly unknownVariables: readonly { readonly name: string; readonly meant: string | null }[];
  /** The configuration errors a job started with this environment would stop on. */
  readonly problems: readonly string[];
}

/** Finds every fact of the report for a process with environment `env` (its settings read once: this process's, or those of `env`). */
export async function doctorReport(env: Environment = process.env, addon: AddonFacts = addonFacts()): Promise<DoctorReport> {
  const settings = settingsOf(env);
  const problems: string[] = [];
  /** `read()`, or `fallback` after noting its configuration error. */
  const attempt = <T>(read: () => T, fallback: T): T => {
    try {
      return read();
    } catch (error) {
      problems.push(error instanceof Error ? error.message : String(error));
      return fallback;
    }
  };
  const dataPlane = dataPlaneFacts(settings, addon, attempt);
  const singleCopySetting = attempt(() => settings.GX1_SINGLE_COPY.value, null);
  const linux = { yamaPtraceScope: yamaPtraceScope(), seccomp: seccompMode() };
  const verdict =
    singleCopySetting === null
      ? { allowed: false, reason: 'GX1_SINGLE_COPY cannot be used (see problems)' }
      : singleCopyVerdict({ platform: process.platform, dataPlaneAbsent: dataPlane.native ? null : dataPlane.reason, setting: singleCopySetting, ...linux, refusal: addon.singleCopyRefusal });
  const sharedMemorySetting = attempt(() => settings.GX1_SHARED_MEMORY.value, null);
  const sameHost = { platform: process.platform, dataPlaneAbsent: dataPlane.native ? null : dataPlane.reason, ...linux, refusal: addon.singleCopyRefusal, kernel: release(), devShm: sharedMemoryFilesystem() };
  const sharedMemory =
    sharedMemorySetting === null ? { allowed: false, reason: 'GX1_SHARED_MEMORY cannot be used (see problems)' } : sharedMemoryVerdict({ ...sameHost, setting: sharedMemorySetting });
  const job = hasJobVariables(env) ? attempt<DiscoveredJob | null>(() => discoverJob(env), null) : null;
  const route = await routeToward(job?.coordinator ?? coordinatorNamed(settings));
  const rails = job?.rails ?? attempt(() => settings.GX1_P2P_RAILS.value, null);
  const railOrderText = settings.GX1_RAIL_ORDER.text;
  const railOrder = rails === null ? null : railOrderText === undefined ? 'auto' : attempt(() => parseRailOrder(rails, railOrderText), null);
  const endpoints =
    rails === null
      ? null
      : attempt(() => peerEndpointConfigurationFromEnvironment({ variables: peerEndpointVariables(settings), rails, jobInterface: route.address ?? LOCAL_COORDINATOR_HOST }), null);
  const processors = cpus();
  return {
    rxccl: { version: packageVersion(), root: packageRoot() },
    node: { version: process.version, platform: platform(), arch: arch(), napi: process.versions.napi ?? 'unknown' },
    host: { hostname: hostname(), cpus: processors.length, availableParallelism: availableParallelism(), cpuModel: processors[0]?.model ?? null, memoryBytes: totalmem() },
    kernels: { native: addon.loaded, addon: addon.path, origin: addon.origin, error: addon.error, simd: addon.simd, threads: addon.kernelThreads },
    resultPool: { keptBytes: addon.resultPoolBytes, fromBytes: POOLED_RESULT_BYTES, transparentHugePages: transparentHugePages() },
    dataPlane,
    singleCopy: { ...verdict, setting: singleCopySetting, ...linux, refusal: addon.singleCopyRefusal },
    sharedMemory: { ...sharedMemory, setting: sharedMemorySetting, kernel: sameHost.kernel, devShm: sameHost.devShm },
    network: {
      interfaces: Object.entries(networkInterfaces()).flatMap(([name, entries]) =>
        (entries ?? []).map((entry) => ({ name, address: entry.address, family: entry.family, cidr: entry.cidr, internal: entry.internal })),
      ),
      job:
        job === null
          ? null
          : {
              launcher: job.launcher,
              rank: job.rank,
              worldSize: job.worldSize,
              localRank: job.localRank,
              coordinator: hostPort(job.coordinator),
              hostsCoordinator: job.hostCoordinator !== null,
            },
      route,
      transport: job?.transport ?? attempt(() => settings.GX1_COLLECTIVE_TRANSPORT.value, null),
      rails,
      railOrder: railOrder === null || railOrder === 'auto' ? railOrder : railOrder.join(','),
      listen: endpoints?.listenAddresses.map(formatEndpoint) ?? [],
      advertise: endpoints?.advertiseAddresses ?? [],
    },
    environment: shownVariables(env),
    settings: effectiveSettings(settings).map((setting) => ({
      ...setting,
      value: setting.value === null ? null : shownVariables({ [setting.variable]: setting.value })[setting.variable]!,
    })),
    unknownVariables: unknownVariables(env),
    problems,
  };
}

/** Whether a rank here would offer the native data plane, and why (not): the resolution's own reason. */
function dataPlaneFacts(settings: Settings, addon: AddonFacts, attempt: <T>(read: () => T, fallback: T) => T): DoctorReport['dataPlane'] {
  const tls = attempt(() => resolveTls(undefined, tlsVariables(settings)) !== null, false);
  const resolved = attempt(() => resolveDataPlane(undefined, settings.GX1_DATA_PLANE, tls, () => addon.dataPlane), null);
  if (resolved === null) return { native: false, setting: null, reason: 'GX1_DATA_PLANE cannot be used here (see problems)' };
  return { native: resolved.setting !== 'js', ...resolved };
}

/**
 * Without a job, the coordinator the variables name all the same (`GX1_COORDINATOR=host:port rxccl
 * doctor` asks how this host reaches it), else `rxccl launch`'s on loopback. Only the host counts:
 * any port shows the route.
 */
function coordinatorNamed(settings: Settings): { host: string; port: number } {
  const named = settings.GX1_COORDINATOR.text?.trim() || undefined;
  if (named !== undefined) {
    try {
      return parseHostPort(named, 'GX1_COORDINATOR');
    } catch {
      // Named among the problems where the job is read.
    }
  }
  return { host: settings.GX1_COORDINATOR_HOST.text?.trim() || LOCAL_COORDINATOR_HOST, port: DISCARD_PORT };
}

/** The port a route is asked toward where none is known (UDP's discard; nothing is sent). */
const DISCARD_PORT = 9;

async function routeToward(coordinator: { host: string; port: number }): Promise<DoctorReport['network']['route']> {
  try {
    const address = await localAddressToward(coordinator.host, coordinator.port);
    return { toward: coordinator.host, address, interface: interfaceHolding(address), error: null };
  } catch (error) {
    return { toward: coordinator.host, address: null, interface: null, error: error instanceof Error ? error.message : String(error) };
  }
}
