import { clusterJob } from '../cluster-job.js';
import type { EnvironmentReader } from '../job-environment.js';
import type { Launcher } from './launcher.js';

const VARIABLES = ['JOB_COMPLETION_INDEX', 'GX1_WORLD_SIZE', 'GX1_COORDINATOR_HOST', 'GX1_COORDINATOR'];

/**
 * A Kubernetes indexed Job: the pod's completion index is its rank. Kubernetes says nothing about
 * the job's size or where pod 0 runs, so GX1_WORLD_SIZE and GX1_COORDINATOR_HOST (pod 0's stable
 * name under a headless Service) or GX1_COORDINATOR come from the Job's manifest.
 */
export const kubernetes: Launcher = {
  name: 'kubernetes',
  title: 'Kubernetes',
  hint: 'JOB_COMPLETION_INDEX [Kubernetes indexed Job]',
  present: (reader) => reader.has('JOB_COMPLETION_INDEX'),
  discover(reader: EnvironmentReader) {
    reader.require(['JOB_COMPLETION_INDEX', 'GX1_WORLD_SIZE'], VARIABLES);
    return clusterJob(reader, {
      launcher: 'kubernetes',
      variables: VARIABLES,
      rank: reader.integer('JOB_COMPLETION_INDEX'),
      worldSize: reader.integer('GX1_WORLD_SIZE'),
      localRank: null,
      localWorldSize: null,
      host: null,
      port: null,
      identity: [],
    });
  },
};
