import { parseTransport } from '../transport/transport-kind.js';
import type { BenchOptions } from './bench-options.js';
import { defineCommand } from './command.js';
import { loadBench } from './load-bench.js';
import { progressBar } from './progress-bar.js';
import { UsageError } from './usage-error.js';

export const benchCommand = defineCommand(
  {
    name: 'bench',
    brief: 'Measure collectives over a local job, as nccl-tests does',
    synopsis: '[-n N] [--op allreduce|...] [-b 8 -e 128M -f 2] [--dtype f32] [-w N] [--iters N] [--quick] [--transport T] [--hosts H [--host-rate R]] [--json] [--peers [--rounds R]]',
    summary: [
      'Measures collectives over a local job of N ranks, one process each, sweeping message sizes',
      'from -b to -e by a factor of -f, and prints nccl-tests columns as each size is measured:',
      'size, count, type, redop, root, then for the out-of-place form (the result in an output of',
      'its own) and the in-place form (in the input, or as NCCL\'s in-place all-gather and',
      'reduce-scatter; "-" for reduce, alltoall, barrier: none) time (us), algbw and busbw (GB/s,',
      '1e9 bytes), and #wrong, the result elements that differed from the expected values (checked',
      'after timing). Each block ends with its average bus bandwidth. Sizes take K, M and G suffixes',
      '(powers of 1024). First a "# plan:" line says what will run and a "# estimate:" line for about',
      'how long (a model, not a measurement); --quick measures 3 sizes (8, 64K, 1M) at 2 ranks with',
      'short samples. Before the first row each rank process warms up (2 s and 3,000 small calls at',
      'least: a cold Node process is several times slower until its JIT settles), which a "# warm-up:"',
      'line reports. A progress bar shows on a terminal only. Exits 1 when some result was wrong.',
      '',
      'With --peers, Gloo (torch.distributed) and Open MPI over TCP on loopback run first, by the',
      "peers' own benchmarks (gloo_bench.py, mpi_bench.c in the package's bench/peers, or",
      "$RXCCL_PEERS_DIR), and Gloo's C++ reduce-scatter (bench/peers/gloo_reduce_scatter.cc, in the Gloo",
      "column: torch's Gloo has none); each row gets every peer's time (us) and rxccl's time over",
      "it (ratio, against rxccl's form the peer runs: in-place all-reduce, broadcast, reduce-scatter).",
      'f32 only. A peer that is not installed is named on a "# peers:" line and skipped (Debian:',
      'apt-get install python3-torch openmpi-bin libopenmpi-dev g++ libgloo-dev); under each block a',
      '"# COLUMN empty:" line says why its "-" cells are empty (no such benchmark, not installed,',
      'its failure).',
      '',
      'With --rounds R, the peers and rxccl are measured in turn R times per world size (rows of each',
      'round in their own blocks), then a summary gives per cell the median time of each and the',
      "median of the R same-round ratios, with their min-max: on a machine whose speed drifts over",
      'minutes, a ratio taken within each round is steadier than one between separate runs.',
      '',
      "With --hosts H (root, Linux), the ranks spread over H hosts, each a network namespace of its own",
      '(one IP, a veth pair into one bridge; rank r of N on host floor(r*H/N)), and so do the peers:',
      'what a job across machines sees of the network, on one machine. --host-rate shapes each',
      "host's egress with tc tbf (1gbit, 10gbit, ...). The namespaces are removed at the end.",
    ].join('\n'),
    flags: {
      ranks: { kind: 'integer', short: 'n', value: 'N', min: 1, list: true, aliases: ['world-sizes'], help: 'number of ranks, or a list (2,4) to run each (default 2,4)' },
      op: {
        kind: 'string',
        value: 'OP',
        list: true,
        aliases: ['ops'],
        help: 'collectives, one or a list: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, barrier (default: all)',
      },
      'min-bytes': { kind: 'size', short: 'b', value: 'B', min: 1, help: 'smallest message size (default 8)' },
      'max-bytes': { kind: 'size', short: 'e', value: 'B', min: 1, help: 'largest message size (default 64M)' },
      'step-factor': { kind: 'integer', short: 'f', value: 'F', min: 2, aliases: ['step'], help: 'size factor from one row to the next (default 8)' },
      sizes: { kind: 'size', value: 'B,...', min: 1, list: true, help: 'these message sizes instead of -b..-e' },
      dtype: { kind: 'string', short: 'd', value: 'T', help: 'element type: f32 (default), f64, f16, bf16, i32, u8, ...' },
      'warmup-iters': { kind: 'integer', short: 'w', value: 'N', help: 'warm-up calls per size after the first (default: about 40 ms of them)' },
      iters: { kind: 'integer', value: 'N', min: 1, help: 'calls per timed sample (default: about 20 ms of them, and 200 at least up to 4 KiB as the peers\' benchmarks)' },
      transport: { kind: 'string', value: 'T', help: 'tcp_peer (default) or tcp_host_staged' },
      quick: { kind: 'boolean', help: 'a first look: sizes 8,64K,1M at 2 ranks, short warm-up and 3 short samples per cell (flags given beside it win)' },
      json: { kind: 'boolean', help: 'print the results as JSON, at the end' },
      markdown: { kind: 'boolean', help: 'print Markdown tables, at the end (for RESULTS.md)' },
      peers: { kind: 'boolean', help: 'also measure Gloo (torch.distributed and its C++ reduce-scatter) and Open MPI over TCP where installed, for their times and ratio columns' },
      rounds: { kind: 'integer', value: 'R', min: 1, help: 'measure the peers and rxccl in turn R times per world size, then sum up the same-round ratios (default 1)' },
      hosts: { kind: 'integer', value: 'H', min: 1, help: 'spread the ranks (and the peers) over H hosts, each a network namespace of its own (root)' },
      'host-rate': { kind: 'string', value: 'R', help: "with --hosts: shape each host's egress to this rate with tc tbf (1gbit, ...)" },
    },
  },
  async (values) => {
    const minBytes = values['min-bytes'];
    const maxBytes = values['max-bytes'];
    if (minBytes !== undefined && maxBytes !== undefined && minBytes > maxBytes) {
      throw new UsageError(`--min-bytes ${minBytes} is larger than --max-bytes ${maxBytes}`);
    }
    if (values.transport !== undefined) parseTransport(values.transport, '--transport');
    if (values['host-rate'] !== undefined && values.hosts === undefined) throw new UsageError('--host-rate needs --hosts');
    const bench = await loadBench();
    // A progress bar only for a person watching a terminal, never into pipes or documents.
    const bar = values.json !== true && values.markdown !== true && process.stderr.isTTY ? progressBar((text) => process.stderr.write(text)) : null;
    const options: BenchOptions = {
      ...(values.ranks !== undefined ? { worldSizes: values.ranks } : {}),
      ...(values.op !== undefined ? { ops: values.op } : {}),
      ...(minBytes !== undefined ? { minBytes } : {}),
      ...(maxBytes !== undefined ? { maxBytes } : {}),
      ...(values['step-factor'] !== undefined ? { step: values['step-factor'] } : {}),
      ...(values.sizes !== undefined ? { sizes: values.sizes } : {}),
      ...(values.dtype !== undefined ? { dtype: values.dtype } : {}),
      ...(values['warmup-iters'] !== undefined ? { warmupIterations: values['warmup-iters'] } : {}),
      ...(values.iters !== undefined ? { iterations: values.iters } : {}),
      ...(values.transport !== undefined ? { transport: values.transport } : {}),
      quick: values.quick ?? false,
      json: values.json ?? false,
      markdown: values.markdown ?? false,
      peers: values.peers ?? false,
      ...(values.rounds !== undefined ? { rounds: values.rounds } : {}),
      ...(values.hosts !== undefined ? { hosts: values.hosts } : {}),
      ...(values['host-rate'] !== undefined ? { hostRate: values['host-rate'] } : {}),
      print: (line) => {
        bar?.clear();
        process.stdout.write(`${line}\n`);
      },
      ...(bar !== null ? { onProgress: (done: number, total: number) => bar.update(done, total) } : {}),
    };
    process.stdout.on('error', endWhenReaderIsGone);
    const { rows } = await bench(options).finally(() => process.stdout.off('error', endWhenReaderIsGone));
    const wrong = rows.reduce((sum, row) => sum + row.wrong + (row.inPlace?.wrong ?? 0), 0);
    if (wrong === 0) return 0;
    process.stderr.write(`rxccl bench: ${wrong} result elements were wrong\n`);
    return 1;
  },
);

/**
 * `rxccl bench | head`: once the reader is gone, so is the point of measuring. The process ends
 * as a C tool ends on SIGPIPE (status 141), and with it the rank processes (the bench kills them
 * on exit) and the in-process coordinator.
 */
export function endWhenReaderIsGone(error: NodeJS.ErrnoException): void {
  if (error.code !== 'EPIPE') throw error;
  process.exit(141);
}
