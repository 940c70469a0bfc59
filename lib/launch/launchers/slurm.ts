import { clusterJob } from '../cluster-job.js';
import type { EnvironmentReader } from '../job-environment.js';
import { expandHostList } from '../slurm-host-list.js';
import type { Launcher } from './launcher.js';

const VARIABLES = ['SLURM_PROCID', 'SLURM_NTASKS', 'SLURM_NPROCS', 'SLURM_LOCALID', 'SLURM_STEP_NODELIST', 'SLURM_JOB_NODELIST', 'SLURM_JOB_ID', 'SLURM_STEP_ID'];

/**
 * Slurm's `srun`. Rank 0 runs on the first host of the step's node list (Slurm's default block
 * distribution), so the coordinator goes there unless GX1_COORDINATOR(_HOST) says otherwise; the
 * port is derived from the job and step ids.
 */
export const slurm: Launcher = {
  name: 'slurm',
  title: 'Slurm',
  hint: 'SLURM_PROCID [srun]',
  present: (reader) => reader.has('SLURM_PROCID'),
  discover(reader: EnvironmentReader) {
    const sizeVariable = reader.has('SLURM_NTASKS') || !reader.has('SLURM_NPROCS') ? 'SLURM_NTASKS' : 'SLURM_NPROCS';
    reader.require(['SLURM_PROCID', sizeVariable], VARIABLES);
    const listVariable = ['SLURM_STEP_NODELIST', 'SLURM_JOB_NODELIST'].find((name) => reader.has(name));
    return clusterJob(reader, {
      launcher: 'slurm',
      variables: VARIABLES,
      rank: reader.integer('SLURM_PROCID'),
      worldSize: reader.integer(sizeVariable),
      localRank: reader.optionalInteger('SLURM_LOCALID') ?? null,
      localWorldSize: null,
      host: listVariable === undefined ? null : expandHostList(reader.text(listVariable)!, listVariable)[0]!,
      port: null,
      identity: [reader.text('SLURM_JOB_ID'), reader.text('SLURM_STEP_ID')],
    });
  },
};
