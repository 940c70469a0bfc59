import type { DiscoveredJob, EnvironmentReader } from '../job-environment.js';
import { parseHostPort } from '../../session/session-options.js';
import { sessionSettings } from '../session-settings.js';
import type { Launcher } from './launcher.js';

const REQUIRED = ['GX1_COORDINATOR', 'GX1_UNIQUE_ID', 'GX1_RANK', 'GX1_WORLD_SIZE'];

/**
 * The variables `rxccl launch` sets (or a user copies from `rxccl coordinator`'s line, adding
 * `GX1_RANK`): the coordinator already runs, so no rank hosts one.
 */
export const rxccl: Launcher = {
  name: 'rxccl',
  title: 'rxccl launch',
  hint: 'GX1_RANK [rxccl launch]',
  present: (reader) => reader.has('GX1_RANK'),
  discover(reader: EnvironmentReader): DiscoveredJob {
    reader.require(REQUIRED, ['GX1_LOCAL_RANK', 'GX1_LOCAL_WORLD_SIZE', 'GX1_P2P_RAILS', 'GX1_COLLECTIVE_TRANSPORT']);
    const rank = reader.integer('GX1_RANK');
    const worldSize = reader.integer('GX1_WORLD_SIZE');
    if (worldSize < 1 || rank >= worldSize) throw reader.error(`rank ${rank} is outside world size ${worldSize} (${reader.show(['GX1_RANK', 'GX1_WORLD_SIZE'])})`);
    return {
      launcher: 'rxccl',
      rank,
      worldSize,
      localRank: reader.optionalInteger('GX1_LOCAL_RANK') ?? null,
      localWorldSize: reader.optionalInteger('GX1_LOCAL_WORLD_SIZE') ?? null,
      coordinator: parseHostPort(reader.text('GX1_COORDINATOR')!, 'GX1_COORDINATOR'),
      uniqueId: reader.uniqueId('GX1_UNIQUE_ID'),
      hostCoordinator: null,
      ...sessionSettings(reader),
    };
  },
};
