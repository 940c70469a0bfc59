import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CollectiveTopology } from '../topology/collective-topology.js';
import { defineCommand } from './command.js';
import { formatTopology } from './format-topology.js';
import { runLocalJob } from './run-local-job.js';
import { RAILS_FLAG } from './session-flags.js';

/** The rank script next to this module; from the TypeScript sources it needs tsx's loader. */
function rankCommand(): string[] {
  const sources = import.meta.url.endsWith('.ts');
  const script = fileURLToPath(new URL(sources ? './probe-rank.ts' : './probe-rank.js', import.meta.url));
  return sources ? ['--import', import.meta.resolve('tsx'), script] : [script];
}

export const probeCommand = defineCommand(
  {
    name: 'probe',
    brief: 'Measure the links between ranks (tcp_peer)',
    synopsis: '[-n N] [--rails R] [--json]',
    summary: [
      'Starts N ranks on this host over the tcp_peer transport, measures the latency and bandwidth',
      'of every link between them (on every rail), and prints the topology and the ring order',
      'collectives would use. GX1_TOPOLOGY_PROBE_BYTES and GX1_TOPOLOGY_PROBE_*_ITERATIONS set how',
      'hard each link is measured.',
    ].join('\n'),
    flags: {
      ranks: { kind: 'integer', short: 'n', value: 'N', min: 2, help: 'number of ranks (default 2)' },
      rails: RAILS_FLAG,
      json: { kind: 'boolean', help: 'print the topology as JSON' },
    },
  },
  async (values) => {
    const directory = mkdtempSync(join(tmpdir(), 'rxccl-probe-'));
    const output = join(directory, 'topology.json');
    try {
      const [node, ...args] = [process.execPath, ...rankCommand()] as [string, ...string[]];
      const { status } = await runLocalJob('probe', {
        worldSize: values.ranks ?? 2,
        rails: values.rails ?? 1,
        transport: 'tcp_peer',
        command: node,
        args,
        env: { ...process.env, RXCCL_PROBE_OUTPUT: output },
        // stdout carries the report alone, so that --json can be piped.
        stdout: process.stderr,
      });
      if (status !== 0) return status;
      const topology = CollectiveTopology.fromJSON(JSON.parse(readFileSync(output, 'utf8')));
      process.stdout.write(values.json === true ? `${JSON.stringify(topology.toJSON(), null, 2)}\n` : formatTopology(topology));
      return 0;
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  },
);
