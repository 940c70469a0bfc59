import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type ProfileOperation, buildAutotuneProfile, type TuneChoice } from '../collectives/autotune-profile.js';
import { decideAlgorithm, formatDecision } from '../collectives/tune-decision.js';
import { resolveTuning } from '../collectives/tuning.js';
import { ConfigurationError } from '../errors.js';
import { parseTransport } from '../transport/transport-kind.js';
import { processSettings } from '../settings/read-settings.js';
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

/** Runs of each policy, by default: five give a min-max spread that one unlucky run does not make. */
const DEFAULT_SAMPLES = 5;

export const tuneCommand = defineCommand(
  {
    name: 'tune',
    brief: 'Measure each algorithm per size and write an autotune profile',
    synopsis: '[-n N] [--sizes B,...] [--op allreduce,...] [--samples R] [--transport T] [--hosts H [--host-rate R]] [-o FILE]',
    summary: [
      'Runs a local job of N ranks (one process each) per algorithm policy (what auto runs, direct,',
      'ring, and hierarchical where GX1_TOPOLOGY_GROUPS is set), R times in turn (--samples, default',
      '5), timing the all-reduce, all-gather, reduce-scatter and all-to-all at each size: each run',
      "gives each algorithm one sample, its median time there. Per operation and size it keeps what",
      'auto runs (the default) unless another algorithm beat it beyond the spread: every one of its',
      "samples faster than every one of the default's (of several, the lowest median). One line per",
      'size says what it decided and why, with each median and min-max. The choices go into the',
      "reference's autotune profile (version 2, with this job's topology and execution",
      'fingerprints), whose absolute path it prints. A session reads it with',
      'GX1_COLLECTIVE_AUTOTUNE_PROFILE=FILE: under auto it then runs the measured choice',
      '(session.plan(...).source is "autotune"); a profile of',
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
      samples: { kind: 'integer', value: 'R', min: 1, help: `runs of each policy, in turn: the samples each decision compares (default ${DEFAULT_SAMPLES}; 1 has no spread)` },
      iters: { kind: 'integer', value: 'N', min: 1, help: 'calls per timed sample within a run (default: about 20 ms of them)' },
      output: { kind: 'string', short: 'o', value: 'FILE', help: 'where the profile goes (default rxccl-autotune.json)' },
    },
  },
  async (values) => {
    if (values.transport !== undefined) parseTransport(values.transport, '--transport');
    if (values['host-rate'] !== undefined && values.hosts === undefined) throw new UsageError('--host-rate needs --hosts');
    const ops = values.op ?? Object.keys(OPERATION_OF_OP);
    for (const op of ops) if (!Object.hasOwn(OPERATION_OF_OP, op)) throw new UsageError(`--op ${op}: rxccl tune measures ${Object.keys(OPERATION_OF_OP).join(', ')}`);
    const worldSize = values.ranks ?? 4;
    const samples = values.samples ?? DEFAULT_SAMPLES;
    const sizes = values.sizes ?? DEFAULT_SIZES;
    // Absolute, as printed: the ranks of a later job may run elsewhere than this shell.
    const output = resolve(values.output ?? 'rxccl-autotune.json');
    // The job's tuning, as its ranks will read it: a bad variable fails here, before any measuring.
    const settings = processSettings();
    const { ringChannels } = resolveTuning({}, worldSize, settings, settings.GX1_P2P_RAILS.value);
    const bench = await loadBench();
    // Each policy's job (its ranks, children of this process) reads its choice from the environment
    // they inherit, set here; a profile already set would steer `auto` itself.
    const saved = { algorithm: settings.GX1_COLLECTIVE_ALGORITHM.text, profile: settings.GX1_COLLECTIVE_AUTOTUNE_PROFILE.text };
    delete process.env.GX1_COLLECTIVE_AUTOTUNE_PROFILE;
    const policies = POLICIES.filter((policy) => policy !== 'hierarchical' || settings.GX1_TOPOLOGY_GROUPS.text !== undefined);
    const bar = process.stderr.isTTY ? progressBar((text) => process.stderr.write(text)) : null;
    const cellsPerRun = ops.length * sizes.length;
    const runs = samples * policies.length;
    const say = (line: string) => {
      bar?.clear();
      process.stdout.write(`${line}\n`);
    };
    const results: { policy: string; result: BenchResult }[] = [];
    // Probed links are measured anew by every run: the first run's links (and groups) are every later run's, declared.
    const probed = settings.GX1_TOPOLOGY_LINKS.text?.trim().toLowerCase() === 'probe';
    const pinned = { links: settings.GX1_TOPOLOGY_LINKS.text, groups: settings.GX1_TOPOLOGY_GROUPS.text };
    let detectedLinks: string | null = null;
    say(`# tune: ${worldSize} ranks, ${ops.join(', ')} at ${sizes.map(sizeName).join(', ')}; policies ${policies.join(', ')}, ${samples} samples each: ${runs} runs`);
    process.stdout.on('error', endWhenReaderIsGone);
    try {
      // The policies in turn, sample after sample: a slow minute of the host falls on every policy alike.
      for (let sample = 1; sample <= samples; sample++) {
        for (const [index, policy] of policies.entries()) {
          const run = (sample - 1) * policies.length + index;
          process.env.GX1_COLLECTIVE_ALGORITHM = policy;
          say(`# tune: sample ${sample} of ${samples}, policy ${policy} (run ${run + 1} of ${runs})`);
          const result = await bench({
            worldSizes: [worldSize],
            ops,
            sizes,
            ...(values.transport !== undefined ? { transport: values.transport } : {}),
            ...(values.hosts !== undefined ? { hosts: values.hosts } : {}),
            ...(values['host-rate'] !== undefined ? { hostRate: values['host-rate'] } : {}),
            ...(values.iters !== undefined ? { iterations: values.iters } : {}),
            // What a profile chooses for is the call as sessions make it by default: out of place.
            inPlace: false,
            // The decisions sum the runs up: their tables would be R times the same rows.
            print: null,
            ...(bar !== null ? { onProgress: (done: number) => bar.update(run * cellsPerRun + done, runs * cellsPerRun) } : {}),
          });
          const wrong = result.rows.reduce((sum, row) => sum + row.wrong, 0);
          if (wrong > 0) throw new ConfigurationError(`policy ${policy} gave ${wrong} wrong result elements; no profile written`);
          results.push({ policy, result });
          if (probed && run === 0) {
            detectedLinks = typeof result.meta.topologyLinks === 'string' ? result.meta.topologyLinks : null;
            if (detectedLinks !== null) process.env.GX1_TOPOLOGY_LINKS = detectedLinks;
            if (typeof result.meta.groups === 'string' && pinned.groups !== undefined) process.env.GX1_TOPOLOGY_GROUPS = result.meta.groups;
          }
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
    const choices = decide(results, worldSize, say);
    const profile = buildAutotuneProfile(choices, { worldSize, ringChannels, fingerprints: first, detectedLinks });
    writeFileSync(output, `${JSON.stringify(profile, null, 2)}\n`);
    say(`# tune: wrote ${output}: ${profile.entries.length} entries (${profile.entries.map((entry) => `${entry.operation} ..${entry.max_payload_bytes}: ${entry.algorithm}`).join(', ')})`);
    say(`# use it: GX1_COLLECTIVE_AUTOTUNE_PROFILE=${shellWord(output)}`);
    return 0;
  },
);

/**
 * Per operation and size, the samples of each algorithm (one per run: its median time there) and
 * the decision between them and what `auto` ran (decideAlgorithm), each printed with its reasons.
 */
function decide(results: readonly { policy: string; result: BenchResult }[], worldSize: number, say: (line: string) => void): TuneChoice[] {
  const cells = new Map<string, { op: string; bytes: number; standard: string | null; samples: Map<string, number[]> }>();
  for (const { policy, result } of results) {
    for (const row of result.rows) {
      if (row.algorithm === undefined) continue;
      const key = `${row.op}/${row.bytes}`;
      const cell = cells.get(key) ?? { op: row.op, bytes: row.bytes, standard: null, samples: new Map<string, number[]>() };
      cells.set(key, cell);
      const algorithm = row.algorithm.split(' on ')[0]!;
      if (policy === 'auto') cell.standard ??= algorithm;
      cell.samples.set(algorithm, [...(cell.samples.get(algorithm) ?? []), row.timeUs * 1e3]);
    }
  }
  return [...cells.values()].map(({ op, bytes, standard, samples }) => {
    if (standard === null) throw new ConfigurationError(`the auto policy measured no ${op} at ${bytes} bytes; no profile written`);
    const decision = decideAlgorithm(standard, [...samples].map(([algorithm, timesNs]) => ({ algorithm, timesNs })));
    say(`# tune: ${formatDecision(`${op} ${sizeName(bytes)}`, decision)}`);
    // The bench counts an all-gather by its whole output; a profile by each rank's input.
    const profileBytes = op === 'allgather' ? bytes / worldSize : bytes;
    const chosen = decision.kept ? decision.challenger! : decision.standard;
    return { operation: OPERATION_OF_OP[op]!, bytes: profileBytes, algorithm: decision.algorithm, timeNs: chosen.medianNs };
  });
}

/** A size as `--sizes` takes it: 8 B, 256 KiB, 1 MiB. */
function sizeName(bytes: number): string {
  for (const [unit, scale] of [['GiB', 1 << 30], ['MiB', 1 << 20], ['KiB', 1 << 10]] as const) if (bytes >= scale && bytes % scale === 0) return `${bytes / scale} ${unit}`;
  return `${bytes} B`;
}

/** `path` as one shell word: as it is where nothing in it is special to a shell, else single-quoted. */
function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, "'\\''")}'`;
}
