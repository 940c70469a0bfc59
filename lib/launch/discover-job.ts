import { type DiscoveredJob, type Environment, EnvironmentReader, noLauncherError } from './job-environment.js';
import { kubernetes } from './launchers/kubernetes.js';
import type { Launcher } from './launchers/launcher.js';
import { openMpi } from './launchers/open-mpi.js';
import { rxccl } from './launchers/rxccl.js';
import { slurm } from './launchers/slurm.js';
import { torchrun } from './launchers/torchrun.js';
import { warnIfDerivedIdUnauthenticated } from '../transport/job-secret.js';
import { settingsOf } from '../settings/read-settings.js';
import { secretVariables } from '../settings/setting-parts.js';

/**
 * Innermost launcher first: rxccl's own variables, then torchrun, then `mpirun` (which may run
 * inside a Slurm allocation, whose batch step leaves SLURM_PROCID=0 in every rank's environment),
 * then `srun`, then a Kubernetes indexed Job.
 */
const LAUNCHERS: readonly Launcher[] = [rxccl, torchrun, openMpi, slurm, kubernetes];

/** The `rxccl coordinator` line without GX1_RANK: reported as incomplete rxccl variables. */
const GX1_JOB = ['GX1_COORDINATOR', 'GX1_UNIQUE_ID', 'GX1_WORLD_SIZE'];

/**
 * Works out this rank's place in its job from environment variables alone (no I/O: the
 * coordinator rank 0 may host is started by `sessionOptionsFromEnvironment`). Throws one
 * ConfigurationError naming what was found and what is missing when the variables are partial or
 * contradict each other. Its one side effect: when the unique id is derived from a cluster
 * launcher's variables (no `GX1_UNIQUE_ID`) and no secret is set, rank 0 warns once for the job
 * (`RXCCL_NO_SECRET`), since anyone who reads or guesses those variables computes the id too.
 */
export function discoverJob(env: Environment): DiscoveredJob {
  const { launchers, gx1 } = readersOf(env);
  const found = launchers.find(({ launcher, reader }) => launcher.present(reader));
  if (found !== undefined) {
    const { launcher, reader } = found;
    const job = launcher.discover(reader);
    // rxccl's own variables always carry the id (and `rxccl launch` a secret); a cluster launcher's
    // job derives it unless GX1_UNIQUE_ID is given (GX1_COORDINATOR requires it). Every rank has the
    // same variables: rank 0 says it for all, rather than a line from each.
    if (launcher !== rxccl && !reader.has('GX1_UNIQUE_ID') && job.rank === 0) warnIfDerivedIdUnauthenticated(launcher.title, secretVariables(reader.settings));
    return job;
  }
  if (GX1_JOB.some((name) => gx1.has(name))) return rxccl.discover(gx1);
  throw noLauncherError(LAUNCHERS.map((candidate) => candidate.hint));
}

/** Whether `env` holds any launcher's variables (or rxccl's own): `discoverJob` then finds a job or says what is wrong with it. */
export function hasJobVariables(env: Environment): boolean {
  const { launchers, gx1 } = readersOf(env);
  return launchers.some(({ launcher, reader }) => launcher.present(reader)) || GX1_JOB.some((name) => gx1.has(name));
}

/** A reader of `env` for each launcher, and one for rxccl's own variables, all over one reading of its settings. */
function readersOf(env: Environment): { launchers: { launcher: Launcher; reader: EnvironmentReader }[]; gx1: EnvironmentReader } {
  const settings = settingsOf(env);
  return {
    launchers: LAUNCHERS.map((launcher) => ({ launcher, reader: new EnvironmentReader(env, launcher.name, settings) })),
    gx1: new EnvironmentReader(env, 'rxccl', settings),
  };
}
