import { clusterJob } from '../cluster-job.js';
import type { EnvironmentReader } from '../job-environment.js';
import type { Launcher } from './launcher.js';

const VARIABLES = ['OMPI_COMM_WORLD_RANK', 'OMPI_COMM_WORLD_SIZE', 'OMPI_COMM_WORLD_LOCAL_RANK', 'OMPI_COMM_WORLD_LOCAL_SIZE', 'PMIX_NAMESPACE'];

/**
 * Open MPI's `mpirun`. It names no address, so the coordinator goes on 127.0.0.1 when every rank
 * runs on this host, and on GX1_COORDINATOR_HOST otherwise; the port is derived from the job's
 * PMIx namespace and mpirun's own URI, so concurrent mpirun jobs on one host do not collide.
 */
export const openMpi: Launcher = {
  name: 'open-mpi',
  title: 'Open MPI',
  hint: 'OMPI_COMM_WORLD_RANK [mpirun]',
  present: (reader) => reader.has('OMPI_COMM_WORLD_RANK') || reader.has('OMPI_COMM_WORLD_SIZE'),
  discover(reader: EnvironmentReader) {
    reader.require(['OMPI_COMM_WORLD_RANK', 'OMPI_COMM_WORLD_SIZE'], VARIABLES);
    const worldSize = reader.integer('OMPI_COMM_WORLD_SIZE');
    const localWorldSize = reader.optionalInteger('OMPI_COMM_WORLD_LOCAL_SIZE') ?? null;
    return clusterJob(reader, {
      launcher: 'open-mpi',
      variables: VARIABLES,
      rank: reader.integer('OMPI_COMM_WORLD_RANK'),
      worldSize,
      localRank: reader.optionalInteger('OMPI_COMM_WORLD_LOCAL_RANK') ?? null,
      localWorldSize,
      host: localWorldSize === worldSize ? '127.0.0.1' : null,
      port: null,
      identity: [reader.text('PMIX_NAMESPACE') ?? reader.text('OMPI_MCA_ess_base_jobid'), reader.text('OMPI_MCA_orte_hnp_uri')],
    });
  },
};
