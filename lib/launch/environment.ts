import { resolveSecret } from '../transport/job-secret.js';
import { resolveTls } from '../transport/tls-settings.js';
import { settingsOf } from '../settings/read-settings.js';
import { secretVariables, tlsVariables } from '../settings/setting-parts.js';
import { DEFAULT_SESSION_TIMEOUT_MS, type SessionOptions } from '../session/session-options.js';
import { discoverJob } from './discover-job.js';
import { hostCoordinator } from './hosted-coordinator.js';
import { type Environment, hostPort } from './job-environment.js';
import { waitUntilResolvable } from './wait-for-host.js';

/**
 * Session options from the environment a launcher gave this rank: `rxccl launch`'s `GX1_*`
 * variables, else torchrun's, Open MPI's, Slurm's or a Kubernetes indexed Job's (see
 * `discoverJob` and docs/launch.md). Where no coordinator runs separately, rank 0 starts one
 * in-process here, on the port every rank agreed on, and the others connect to it (they wait for
 * its name to resolve, and their connects retry until it listens).
 */
export async function sessionOptionsFromEnvironment(env: Environment): Promise<SessionOptions> {
  const job = discoverJob(env);
  const settings = settingsOf(env);
  // Under every launcher: the secret is the credential, the unique id (computable under
  // torchrun, Slurm, Kubernetes) only names the job.
  const secret = resolveSecret(undefined, secretVariables(settings));
  const tls = resolveTls(undefined, tlsVariables(settings));
  const options: SessionOptions = {
    coordinator: hostPort(job.coordinator),
    uniqueId: job.uniqueId,
    rank: job.rank,
    worldSize: job.worldSize,
    rails: job.rails,
    // Only where the environment names one: a rank that chose none takes its coordinator's.
    ...(settings.GX1_COLLECTIVE_TRANSPORT.source === 'environment' ? { transport: job.transport } : {}),
    ...(job.timeoutMs !== undefined ? { timeoutMs: job.timeoutMs } : {}),
    ...(job.collectiveTimeoutMs !== undefined ? { collectiveTimeoutMs: job.collectiveTimeoutMs } : {}),
    ...(secret !== null ? { secret } : {}),
    ...(tls !== null ? { tls: { cert: tls.cert, key: tls.key, ...(tls.ca !== null ? { ca: tls.ca } : {}) } } : {}),
  };
  if (job.hostCoordinator !== null && job.rank === 0) return hostCoordinator(job, job.hostCoordinator.bind, options, settings);
  await waitUntilResolvable(job.coordinator.host, job.timeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS);
  return options;
}
