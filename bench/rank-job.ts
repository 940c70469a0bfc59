import { LocalJob } from '../lib/launch/local-job.js';
import { capturedOutput } from './captured-output.js';
import type { HostNamespaces } from './collectives/hosts.js';

/** How a bench's rank job runs beside the default (every rank on loopback, not fault-tolerant). */
export interface RankJobOptions {
  /** Ranks on these hosts (rank r of W on host floor(r * H / W)), the coordinator on their bridge. */
  readonly hosts?: HostNamespaces | null;
  /** A fault-tolerant job, as `rxccl launch --keep-going` starts it. */
  readonly keepGoing?: boolean;
  /** Node's flags for every rank (`--no-opt`), before the script. */
  readonly nodeFlags?: readonly string[];
}

/**
 * Runs `script` (a bench's own file, with `args`) as a tcp_peer job of `worldSize` rank processes,
 * as `rxccl launch` starts them, and returns the JSON of every line its ranks printed after
 * `marker ` (rank 0 prints them, by convention), in order. Fails with the job's failure.
 */
export async function rankJobLines<T>(worldSize: number, script: string, args: readonly string[], marker: string, options: RankJobOptions = {}): Promise<T[]> {
  const { hosts = null, keepGoing = false, nodeFlags = [] } = options;
  const captured = capturedOutput();
  // A bench run from its compiled JS (dist/bench) runs its ranks without tsx, as installed.
  const node = [...nodeFlags, ...(script.endsWith('.ts') ? ['--import', 'tsx'] : []), script, ...args];
  // Each rank enters its host's namespace by its GX1_RANK, which the job sets.
  const inHost = hosts === null ? null : ['-c', `exec ip netns exec ${hosts.rankNamespace('GX1_RANK', worldSize)} "$0" "$@"`, process.execPath, ...node];
  const job = await LocalJob.start({
    worldSize,
    command: inHost === null ? process.execPath : 'sh',
    args: inHost ?? node,
    transport: 'tcp_peer',
    keepGoing,
    env: process.env,
    stdout: captured.stream,
    stderr: process.stderr,
    ...(hosts === null ? {} : { coordinatorHost: hosts.coordinatorAddress }),
  });
  const outcome = await job.outcome;
  if (!outcome.ok) throw new Error(`the ${worldSize}-rank job failed: ${outcome.failure}`);
  return captured.text().split('\n').flatMap((line) => {
    const at = line.indexOf(`${marker} `);
    return at < 0 ? [] : [JSON.parse(line.slice(at + marker.length + 1)) as T];
  });
}
