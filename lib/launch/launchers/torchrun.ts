import { clusterJob } from '../cluster-job.js';
import type { EnvironmentReader } from '../job-environment.js';
import type { Launcher } from './launcher.js';

const VARIABLES = ['RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'TORCHELASTIC_RUN_ID', 'TORCHELASTIC_RESTART_COUNT'];

/**
 * torchrun (and `torch.distributed.launch`). The coordinator goes on MASTER_ADDR, one port above
 * MASTER_PORT: MASTER_PORT itself belongs to torch's own store (torchrun's agent hosts it there
 * with the static rendezvous, and torch.distributed's rank 0 binds it in a script that uses both).
 */
export const torchrun: Launcher = {
  name: 'torchrun',
  title: 'torchrun',
  hint: 'RANK+WORLD_SIZE or MASTER_ADDR [torchrun]',
  present: (reader) =>
    ['MASTER_ADDR', 'MASTER_PORT', 'TORCHELASTIC_RUN_ID'].some((name) => reader.has(name)) || (reader.has('RANK') && reader.has('WORLD_SIZE')),
  discover(reader: EnvironmentReader) {
    reader.require(['RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT'], VARIABLES);
    const masterPort = reader.integer('MASTER_PORT');
    if (masterPort < 1 || masterPort >= 65535) throw reader.error(`MASTER_PORT must be in 1..65534 (rxccl uses the port above it), got ${masterPort}`);
    return clusterJob(reader, {
      launcher: 'torchrun',
      variables: VARIABLES,
      rank: reader.integer('RANK'),
      worldSize: reader.integer('WORLD_SIZE'),
      localRank: reader.optionalInteger('LOCAL_RANK') ?? null,
      localWorldSize: reader.optionalInteger('LOCAL_WORLD_SIZE') ?? null,
      host: reader.text('MASTER_ADDR')!,
      port: masterPort + 1,
      // A restarted worker group is a new run: it must not meet stragglers of the last one.
      identity: [reader.text('TORCHELASTIC_RUN_ID'), reader.text('TORCHELASTIC_RESTART_COUNT'), reader.text('MASTER_ADDR'), masterPort],
    });
  },
};
