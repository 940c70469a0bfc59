/**
 * One rank of `rxccl probe` (a script, run in a process of its own): joins the job from its
 * environment, measures its links with the others, and rank 0 writes the topology, as JSON, to
 * the file RXCCL_PROBE_OUTPUT names. Probe sizes follow the GX1_TOPOLOGY_PROBE_* variables.
 */
import { writeFileSync } from 'node:fs';
import { openSession } from '../launch/open-session.js';

const output = process.env.RXCCL_PROBE_OUTPUT;
if (output === undefined) throw new Error('probe-rank runs under `rxccl probe`, which sets RXCCL_PROBE_OUTPUT');
const session = await openSession();
try {
  const topology = await session.probeTopology();
  if (session.rank === 0) writeFileSync(output, JSON.stringify(topology.toJSON()));
} finally {
  await session.close();
}
