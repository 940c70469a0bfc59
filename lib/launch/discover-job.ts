import { type DiscoveredJob, type Environment, EnvironmentReader, noLauncherError } from './job-environment.js';
import { kubernetes } from './launchers/kubernetes.js';
import type { Launcher } from './launchers/launcher.js';
import { openMpi } from './launchers/open-mpi.js';
import { rxccl } from './launchers/rxccl.js';
import { slurm } from './launchers/slurm.js';
import { torchrun } from './launchers/torchrun.js';

/**
 * Innermost launcher first: rxccl's own variables, then torchrun, then `mpirun` (which may run
 * inside a Slurm allocation, whose batch step leaves SLURM_PROCID=0 in every rank's environment),
 * then `srun`, then a Kubernetes indexed Job.
 */
const LAUNCHERS: readonly Launcher[] = [rxccl, torchrun, openMpi, slurm, kubernetes];

/** The `rxccl coordinator` line without GX1_RANK: reported as incomplete rxccl variables. */
const GX1_JOB = ['GX1_COORDINATOR', 'GX1_UNIQUE_ID', 'GX1_WORLD_SIZE'];

/**
 * Works out this rank's place in its job from environment variables alone (a pure function: the
 * coordinator rank 0 may host is started by `sessionOptionsFromEnvironment`). Throws one
 * ConfigurationError naming what was found and what is missing when the variables are partial or
 * contradict each other.
 */
export function discoverJob(env: Environment): DiscoveredJob {
  const launcher = LAUNCHERS.find((candidate) => candidate.present(new EnvironmentReader(env, candidate.name)));
  if (launcher !== undefined) return launcher.discover(new EnvironmentReader(env, launcher.name));
  const gx1 = new EnvironmentReader(env, 'rxccl');
  if (GX1_JOB.some((name) => gx1.has(name))) return rxccl.discover(gx1);
  throw noLauncherError(LAUNCHERS.map((candidate) => candidate.hint));
}
