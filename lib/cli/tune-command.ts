import { writeFileSync } from 'node:fs';
import { type ProfileOperation, buildAutotuneProfile, type TuneMeasurement } from '../collectives/autotune-profile.js';
import { resolveTuning } from '../collectives/tuning.js';
import { ConfigurationError } from '../errors.js';
import { parseRails, parseTransport } from '../transport/transport-kind.js';
import type { BenchResult } from './bench-options.js';
import { endWhenReaderIsGone } from './bench-command.js';
import { defineCommand } from './command.js';
import { loadBench } from './load-bench.js';
import { progressBar } from './progress-bar.js';
import { UsageError } from './usage-error.js';

/** The policies `rxccl tune` measures: what `auto` runs, the staged path, the flat ring, and the hierarchy where the job has groups. */
const POLICIES = ['auto', 'direct', 'ring', 'hierarchical'] as const;

/** The bench's op names of the operations a profile holds. */
const OPERATION_OF_OP: Readonly<Record<string, ProfileOperation>> = { allreduce: 'allreduce', allgather: 'allgather', reducescatter: 'reduce_scatter', alltoall: 'alltoall' };

const DEFAULT_SIZES = [8, 4096, 65536, 1 << 20, 16 << 20, 64 << 20];

export const tuneCommand = defineCommand(
  {
    name: 'tune',
    brief: 'Measure each algorithm per size and write an autotune profile',
    synopsis: '[-n N] [--sizes B,...] [--op allreduce,...] [--transport T] [--hosts H [--host-rate R]] [-o FILE]',
    summary: [
      'Runs a local job of N ranks (one process each) once per algorithm policy (what auto runs,',
      'direct, ring, and hierarchical where GX1_TOPOLOGY_GROUPS is set), times the all-reduce,',
      'all-gather, reduce-scatter and all-to-all at each size, and writes the fastest per operation',
      'and size as the reference\'s autotune profile (version 2, with this job\'s topology and',
      'execution fingerprints). A session reads it with GX1_COLLECTIVE_AUTOTUNE_PROFILE=FILE: under',
      'auto it then runs the measured choice (session.plan(...).source is "autotune"); a profile of',
      'another topology, world size or transport is refused. The GX1_* tuning variables of this',
      'shell (links, groups, channels, rails) are the job\'s, as they will be when the profile is read.',
      'With --hosts H (root, Linux) the ranks spread over H network namespaces, as rxccl bench does.',
    ].join('\n'),
    flags: {
      ranks: { kind: 'integer', short: 'n', value: 'N', min: 2, help: 'number of ranks (default 4)' },
      sizes: { kind: 'size', value: 'B,...', min: 1, list: true, help: 'message sizes, as rxccl bench counts them (default 8,4K,64K,1M,16M,64M)' },
      op: { kind: 'string', value: 'OP', list: true, help: 'operations: allreduce, allgather, reducescatter, alltoall (default: all four)' },
      transport: { kind: 'string', value: 'T', help: 'tcp_peer (default) or tcp_host_staged' },
      hosts: { kind: 'integer', value: 'H', min: 1, help: 'spread the ranks over H hosts, each a network namespace of its own (root)' },
      'host-rate': { kind: 'string', value: 'R', help: "with --hosts: shape each host's egress to this rate with tc tbf (1gbit, ...)" },
      iters: { kind: 'integer', value: 'N', min: 1, help: 'calls per timed sample (default: about 20 ms of them)' },
      output: { kind: 'string', short: 'o', value: 'FILE', help: 'where the profile goes (default rxccl-autotune.json)' },
    },
  },
  async (values) => {
    if (values.transport !== undefined) parseTransport(values.transport, '--transport');
    if (values['host-rate'] !== undefined && values.hosts === undefined) throw new UsageError('--host-rate needs --hosts');
    const ops = values.op ?? Object.keys(OPERATION_OF_OP);
    for (const op of ops) if (!Object.hasOwn(OPERATION_OF_OP, op)) throw new UsageError(`--op ${op}: rxccl tune measures ${Object.keys(OPERATION_OF_OP).join(', ')}`);
    const worldSize = values.ranks ?? 4;
    const output = values.output ?? 'rxccl-autotune.json';
    // The job's tuning, as its ranks will read it: a bad variable fails here, before any measuring.
    const { ringChannels } = resolveTuning({}, worldSize, process.env, parseRails(process.env.GX1_P2P_RAILS));
    const bench = await loadBench();
    // Each policy's job reads its choice from the environment; a profile already set would steer `auto` itself.
    const saved = { algorithm: process.env.GX1_COLLECTIVE_ALGORITHM, profile: process.env.GX1_COLLECTIVE_AUTOTUNE_PROFILE };
    delete process.env.GX1_COLLECTIVE_AUTOTUNE_PROFILE;
    const policies = POLICIES.filter((policy) => policy !== 'hierarchical' || process.env.GX1_TOPOLOGY_GROUPS !== undefined);
    const bar = process.stderr.isTTY ? progressBar((text) => process.stderr.write(text)) : null;
    const cellsPerRun = ops.length * (values.sizes ?? DEFAULT_SIZES).length;
    const say = (line: string) => {
      bar?.clear();
      process.stdout.write(`${line}\n`);
    };
    const results: { policy: string; result: BenchResult }[] = [];
    // Probed links are measured anew by every run: the first run's links (and groups) are every later run's, declared.
    const probed = process.env.GX1_TOPOLOGY_LINKS?.trim().toLowerCase() === 'probe';
    const pinned = { links: process.env.GX1_TOPOLOGY_LINKS, groups: process.env.GX1_TOPOLOGY_GROUPS };
    let detectedLinks: string | null = null;
    process.stdout.on('error', endWhenReaderIsGone);
    try {
      for (const [index, policy] of policies.entries()) {
        process.env.GX1_COLLECTIVE_ALGORITHM = policy;
        say(`# tune: ${worldSize} ranks, policy ${policy} (${index + 1} of ${policies.length})`);
        const result = await bench({
          worldSizes: [worldSize],
          ops,
          sizes: values.sizes ?? DEFAULT_SIZES,
          ...(values.transport !== undefined ? { transport: values.transport } : {}),
          ...(values.hosts !== undefined ? { hosts: values.hosts } : {}),
          ...(values['host-rate'] !== undefined ? { hostRate: values['host-rate'] } : {}),
          ...(values.iters !== undefined ? { iterations: values.iters } : {}),
          print: say,
          ...(bar !== null ? { onProgress: (done: number) => bar.update(index * cellsPerRun + done, policies.length * cellsPerRun) } : {}),
        });
        const wrong = result.rows.reduce((sum, row) => sum + row.wrong, 0);
        if (wrong > 0) throw new ConfigurationError(`policy ${policy} gave ${wrong} wrong result elements; no profile written`);
        results.push({ policy, result });
        if (probed && index === 0) {
          detectedLinks = typeof result.meta.topologyLinks === 'string' ? result.meta.topologyLinks : null;
          if (detectedLinks !== null) process.env.GX1_TOPOLOGY_LINKS = detectedLinks;
          if (typeof result.meta.groups === 'string' && process.env.GX1_TOPOLOGY_GROUPS !== undefined) process.env.GX1_TOPOLOGY_GROUPS = result.meta.groups;
        }
      }
    } finally {
      process.stdout.off('error', endWhenReaderIsGone);
      const restored = [
        ['GX1_COLLECTIVE_ALGORITHM', saved.algorithm],
        ['GX1_COLLECTIVE_AUTOTUNE_PROFILE', saved.profile],
        ['GX1_TOPOLOGY_LINKS', pinned.links],
        ['GX1_TOPOLOGY_GROUPS', pinned.groups],
      ] as const;
      for (const [name, value] of restored) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    const fingerprints = results.map(({ policy, result }) => ({ policy, fingerprints: result.meta.fingerprints as { topology: string; execution: string } | undefined }));
    const first = fingerprints[0]!.fingerprints;
    if (first === undefined) throw new ConfigurationError('the bench reported no fingerprints (an older bench build?)');
    const differing = fingerprints.find(({ fingerprints: other }) => other?.topology !== first.topology);
    if (differing !== undefined) {
      throw new ConfigurationError(
        `the job's topology changed between runs (fingerprint ${first.topology} under ${fingerprints[0]!.policy}, ${String(differing.fingerprints?.topology)} under ${differing.policy}): ` +
          'a probed topology (GX1_TOPOLOGY_LINKS=probe) of several rails measured differently; declare the links instead',
      );
    }
    const measurements: TuneMeasurement[] = results.flatMap(({ result }) =>
      result.rows.flatMap((row) => {
        if (row.algorithm === undefined) return [];
        // The bench counts an all-gather by its whole output; a profile by each rank's input.
        const bytes = row.op === 'allgather' ? row.bytes / row.worldSize : row.bytes;
        return [{ operation: OPERATION_OF_OP[row.op]!, bytes, algorithm: row.algorithm.split(' on ')[0]!, timeNs: row.timeUs * 1e3 }];
      }),
    );
    const profile = buildAutotuneProfile(measurements, { worldSize, ringChannels, fingerprints: first, detectedLinks });
    writeFileSync(output, `${JSON.stringify(profile, null, 2)}\n`);
    say(`# tune: wrote ${output}: ${profile.entries.length} entries (${profile.entries.map((entry) => `${entry.operation} ..${entry.max_payload_bytes}: ${entry.algorithm}`).join(', ')})`);
    say(`# use it: GX1_COLLECTIVE_AUTOTUNE_PROFILE=${output}`);
    return 0;
  },
);
