import { parseHostPort } from '../session/session-options.js';
import { type JobIdentity, portOf, uniqueIdOf } from './job-identity.js';
import type { DiscoveredJob, EnvironmentReader, LauncherName } from './job-environment.js';
import { sessionSettings } from './session-settings.js';

/** What a cluster launcher's own variables say about this rank. */
export interface LauncherFacts {
  readonly launcher: LauncherName;
  /** The launcher's variables that were read, shown next to an error. */
  readonly variables: readonly string[];
  readonly rank: number;
  readonly worldSize: number;
  readonly localRank: number | null;
  readonly localWorldSize: number | null;
  /** The coordinator host the launcher implies (MASTER_ADDR, the first Slurm node...), or null. */
  readonly host: string | null;
  /** The coordinator port the launcher implies, or null to derive one from `identity`. */
  readonly port: number | null;
  /** The launcher's run identity (job id, step, restart count...), shared by every rank. */
  readonly identity: JobIdentity;
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|::1)$/i;

/**
 * A job under a cluster launcher (torchrun, Open MPI, Slurm, a Kubernetes indexed Job), with the
 * `GX1_*` variables that refine it:
 * - `GX1_COORDINATOR=host:port` names a coordinator that runs separately (`rxccl coordinator`); it
 *   needs the `GX1_UNIQUE_ID` that coordinator printed.
 * - otherwise rank 0 hosts the coordinator on `GX1_COORDINATOR_HOST` (default: the host the
 *   launcher implies) and `GX1_COORDINATOR_PORT` (default: the launcher's, or one derived from the
 *   job identity), and the unique id is derived from the job identity unless `GX1_UNIQUE_ID` is set.
 */
export function clusterJob(reader: EnvironmentReader, facts: LauncherFacts): DiscoveredJob {
  const { rank, worldSize } = facts;
  const context = facts.variables.filter((name) => reader.has(name));
  if (worldSize < 1) throw reader.error(`world size must be at least 1 (${reader.show(context)})`);
  if (rank >= worldSize) throw reader.error(`rank ${rank} is outside world size ${worldSize} (${reader.show(context)})`);
  const declared = reader.optionalInteger('GX1_WORLD_SIZE');
  if (declared !== undefined && declared !== worldSize) {
    throw reader.error(`GX1_WORLD_SIZE=${declared} contradicts the launcher's world size ${worldSize} (${reader.show(context)})`);
  }
  const settings = sessionSettings(reader);
  const shared = { launcher: facts.launcher, rank, worldSize, localRank: facts.localRank, localWorldSize: facts.localWorldSize, ...settings };

  if (reader.has('GX1_COORDINATOR')) {
    const conflicting = ['GX1_COORDINATOR_HOST', 'GX1_COORDINATOR_PORT'].filter((name) => reader.has(name));
    if (conflicting.length > 0) {
      throw reader.error(
        `GX1_COORDINATOR (a coordinator started separately) contradicts ${conflicting.join(' and ')} (where rank 0 would host one): ` +
          `found ${reader.show(['GX1_COORDINATOR', ...conflicting])}; set only one`,
      );
    }
    if (!reader.has('GX1_UNIQUE_ID')) {
      throw reader.error(
        `GX1_COORDINATOR=${reader.text('GX1_COORDINATOR')} names a coordinator started separately, but GX1_UNIQUE_ID is missing: ` +
          'set it to the id that `rxccl coordinator` printed (or set GX1_COORDINATOR_HOST instead to let rank 0 host the coordinator)',
      );
    }
    return {
      ...shared,
      coordinator: parseHostPort(reader.text('GX1_COORDINATOR')!, 'GX1_COORDINATOR'),
      uniqueId: reader.uniqueId('GX1_UNIQUE_ID'),
      hostCoordinator: null,
    };
  }

  const host = reader.text('GX1_COORDINATOR_HOST') ?? facts.host;
  if (host === null) {
    throw reader.error(
      `missing GX1_COORDINATOR_HOST (the host of rank 0, which hosts the coordinator) or GX1_COORDINATOR (a coordinator started separately); found ${reader.show(context)}`,
    );
  }
  const port = coordinatorPort(reader) ?? facts.port ?? portOf([facts.launcher, ...facts.identity, host, worldSize]);
  return {
    ...shared,
    coordinator: { host, port },
    uniqueId: reader.has('GX1_UNIQUE_ID') ? reader.uniqueId('GX1_UNIQUE_ID') : uniqueIdOf([facts.launcher, ...facts.identity, host, port, worldSize]),
    // A loopback coordinator stays private to the host; any other must be reachable from the others.
    hostCoordinator: { bind: LOOPBACK.test(host) ? host : '0.0.0.0' },
  };
}

function coordinatorPort(reader: EnvironmentReader): number | undefined {
  const port = reader.optionalInteger('GX1_COORDINATOR_PORT');
  if (port !== undefined && (port < 1 || port > 65535)) throw reader.error(`GX1_COORDINATOR_PORT must be in 1..65535, got ${port}`);
  return port;
}
