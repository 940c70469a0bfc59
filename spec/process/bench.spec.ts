/**
 * The collectives bench (bench/collectives/run.ts) end to end, on a tiny plan: worker processes
 * per rank, rows with nccl-tests' columns and bus factors, the data check, progress, JSON output,
 * `rxccl bench`'s nccl-tests flags, and rounds of the peers and rxccl in turn.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { countWrong, inputTensor } from '../../bench/collectives/data-check.js';
import { NcclTable } from '../../bench/collectives/nccl-table.js';
import { GLOO } from '../../bench/collectives/peers/gloo.js';
import { HostNamespaces } from '../../bench/collectives/hosts.js';
import { type PeerState, whyEmpty } from '../../bench/collectives/peers/empty-cell.js';
import { GLOO_REDUCE_SCATTER } from '../../bench/collectives/peers/gloo-reduce-scatter.js';
import { OPEN_MPI_TCP } from '../../bench/collectives/peers/open-mpi.js';
import { measurePeer, parsePeerRows, peerKey, peersDirectory } from '../../bench/collectives/peers/peer.js';
import { estimateSeconds, formatDuration, formSeconds } from '../../bench/collectives/estimate.js';
import { type BenchOp, type BenchRow, busFactor, callsPerSample, type Cell, cellFor, DEFAULT_BUDGET, type ProcessWarmup, QUICK, sizeSweep, warmupCalls } from '../../bench/collectives/plan.js';
import { cellRounds, formatRoundSummary } from '../../bench/collectives/rounds.js';
import { runCollectivesBench } from '../../bench/collectives/run.js';
import type { TypedArray } from '../../lib/tensor.js';
import { runRxccl, startRxccl } from '../cli/rxccl-process.js';

const FAST = { processWarmupMs: 1, processWarmupCalls: 0, smallBatch: 0, warmupMs: 1, sampleMs: 1, minSamples: 2, maxSamples: 2, cellMs: 1 };

/** A measured row of `op` (f32, tcp_peer) taking `timeUs` per call, for the report's own tests. */
function benchRow(op: BenchOp, bytes: number, worldSize: number, timeUs: number): BenchRow {
  const algbw = bytes / timeUs / 1e3;
  return { op, worldSize, transport: 'tcp_peer', dtype: 'f32', bytes, count: bytes / 4, timeUs, minUs: timeUs, maxUs: timeUs, algbw, busbw: algbw, samples: 2, iterations: 2, warmup: 1, wrong: 0 };
}

describe('collectives bench', () => {
  it('sizes and bus factors follow nccl-tests', () => {
    expect(sizeSweep(8, 64 * 1024 * 1024, 8)).toEqual([8, 64, 512, 4096, 32768, 262144, 2097152, 16777216, 67108864]);
    expect(sizeSweep(8, 64, 4)).toEqual([8, 32, 64]);
    expect(busFactor('allreduce', 4)).toBe(1.5);
    expect(busFactor('allgather', 4)).toBe(0.75);
    expect(busFactor('reducescatter', 2)).toBe(0.5);
    expect(busFactor('alltoall', 4)).toBe(0.75);
    expect(busFactor('broadcast', 4)).toBe(1);
    expect(busFactor('reduce', 2)).toBe(1);
    // At least one element per rank; split collectives divisible by the world size.
    expect(cellFor('allgather', 'f32', 8, 4)).toMatchObject({ bytes: 16, count: 4, inputCount: 1 });
    expect(cellFor('alltoall', 'f32', 8, 4)).toMatchObject({ bytes: 16, count: 4, inputCount: 4 });
    expect(cellFor('allreduce', 'f32', 8, 4)).toMatchObject({ bytes: 8, count: 2, inputCount: 2 });
    expect(cellFor('reducescatter', 'bf16', 64, 3)).toMatchObject({ bytes: 60, count: 30, inputCount: 30 });
  });

  it('runs ranks as processes and reports a checked row per cell', async () => {
    const progress: [number, number][] = [];
    let printed = '';
    const result = await runCollectivesBench({
      worldSizes: [2],
      ops: ['allreduce', 'all_gather', 'barrier'],
      minBytes: 8,
      maxBytes: 64,
      json: true,
      // 3 collectives a round, looked at every 50 rounds: 400 calls take 3 looks.
      budget: { ...FAST, processWarmupCalls: 400 },
      onProgress: (done, total) => progress.push([done, total]),
      print: (text) => {
        printed += text;
      },
    });
    expect(result.rows.map((row) => [row.op, row.bytes])).toEqual([
      ['allreduce', 8],
      ['allreduce', 64],
      ['allgather', 8],
      ['allgather', 64],
      ['barrier', 0],
    ]);
    for (const row of result.rows) {
      expect(row.worldSize).toBe(2);
      expect(row.transport).toBe('tcp_peer');
      expect(row.samples).toBe(2);
      expect(row.wrong).toBe(0);
      expect(row.timeUs).toBeGreaterThan(0);
      if (row.bytes > 0) {
        expect(row.algbw).toBeCloseTo(row.bytes / row.timeUs / 1e3, 9);
        expect(row.busbw).toBeCloseTo(row.algbw * busFactor(row.op, 2), 12);
      }
    }
    expect(progress.at(0)).toEqual([0, 5]);
    expect(progress.at(-1)).toEqual([5, 5]);
    const parsed = JSON.parse(printed) as { rows: unknown[]; meta: { transport: string; warmups: Record<string, ProcessWarmup> } };
    expect(parsed.rows).toHaveLength(5);
    expect(parsed.meta.transport).toBe('tcp_peer');
    const warmup = parsed.meta.warmups['2']!;
    expect(warmup).toMatchObject({ worldSize: 2, calls: 450 });
    for (const time of [warmup.seconds, warmup.firstUs, warmup.lastUs]) expect(time).toBeGreaterThan(0);
  }, 30_000);

  it('refuses unknown collectives and element types before starting anything', async () => {
    await expect(runCollectivesBench({ ops: ['allreduse'], print: null })).rejects.toThrow(/unknown collective "allreduse" \(did you mean allreduce\?\)/);
    await expect(runCollectivesBench({ dtype: 'f128', print: null })).rejects.toThrow(/unknown dtype "f128"/);
  });
});

describe('the data check', () => {
  const WORLD = 3;
  type Checked = 'i8' | 'f32' | 'i64';

  /** Each rank's output of a correct collective, computed from the ranks' inputs. */
  function correctOutputs(op: BenchOp, dtype: Checked): { cell: Cell; outputs: (TypedArray | null)[] } {
    const cell = cellFor(op, dtype, 48, WORLD);
    const inputs = Array.from({ length: WORLD }, (_, rank) => Array.from(inputTensor(cell, rank) as TypedArray, Number));
    const sum = inputs[0]!.map((_, index) => inputs.reduce((total, input) => total + input[index]!, 0));
    const block = cell.inputCount / WORLD;
    const output = (rank: number): number[] | null => {
      switch (op) {
        case 'allreduce':
          return sum;
        case 'reduce':
          return rank === 0 ? sum : null;
        case 'broadcast':
          return inputs[0]!;
        case 'allgather':
          return inputs.flat();
        case 'reducescatter':
          return sum.slice(rank * block, (rank + 1) * block);
        default:
          return inputs.flatMap((input) => input.slice(rank * block, (rank + 1) * block));
      }
    };
    return { cell, outputs: Array.from({ length: WORLD }, (_, rank) => typed(dtype, output(rank))) };
  }

  function typed(dtype: Checked, values: number[] | null): TypedArray | null {
    if (values === null) return null;
    return dtype === 'i64' ? BigInt64Array.from(values, BigInt) : dtype === 'i8' ? Int8Array.from(values) : Float32Array.from(values);
  }

  it.each(['allreduce', 'reduce', 'broadcast', 'allgather', 'reducescatter', 'alltoall'] as const)('finds no wrong element in a correct %s and counts each corrupted one', (op) => {
    for (const dtype of ['i8', 'f32', 'i64'] as const) {
      const { cell, outputs } = correctOutputs(op, dtype);
      outputs.forEach((output, rank) => expect(countWrong(cell, output, rank, WORLD)).toBe(0));
      const root = Array.from(outputs[0]!, Number);
      // 99 is no input and no sum of inputs (1..4 each).
      expect(countWrong(cell, typed(dtype, [99, 99, ...root.slice(2)]), 0, WORLD)).toBe(2);
      expect(countWrong(cell, typed(dtype, root.slice(0, -1)), 0, WORLD)).toBe(1);
      expect(countWrong(cell, null, 0, WORLD)).toBe(root.length);
    }
  });

  it('expects 8-bit sums to wrap as the kernels wrap them', () => {
    const cell = cellFor('allreduce', 'u8', 4, 100);
    const sums = Array.from({ length: 4 }, (_, index) => Array.from({ length: 100 }, (_, rank) => ((rank + index) % 4) + 1).reduce((a, b) => a + b) % 256);
    expect(countWrong(cell, Uint8Array.from(sums), 0, 100)).toBe(0);
  });
});

describe('peers', () => {
  const HEADER = '#peer\tworld\top\tbytes\tmedian_us\tmin_us\tmax_us\talgbw_GBps\tbusbw_GBps\tsamples\ttag\tcpu_cores\n';

  it("reads gloo_bench.py's and mpi_bench.c's rows, each peer its own", () => {
    const text =
      HEADER +
      'gloo\t2\tallreduce\t8\t187.5\t150.0\t200.0\t0.000\t0.000\t11x200\trun1\t1.90\n' +
      'gloo\t2\tbarrier\t0\t164.0\t1\t2\t0\t0\t11x200\trun1\t1.5\n' +
      'mpi-tcp\t4\tallreduce\t1048576\t700.2\t650.0\t800.0\t1.498\t2.247\t11x10\trxccl-bench\t3.80\n' +
      'mpi-tcp\t4\tbarrier\t0\t19.9\t18.0\t25.0\t0.000\t0.000\t11x200\trxccl-bench\t3.90\n' +
      'not a row\n\n';
    expect(parsePeerRows(text, GLOO.label)).toEqual(
      new Map([
        ['allreduce/8/2', 187.5],
        ['barrier/0/2', 164],
      ]),
    );
    expect(parsePeerRows(text, OPEN_MPI_TCP.label)).toEqual(
      new Map([
        ['allreduce/1048576/4', 700.2],
        ['barrier/0/4', 19.9],
      ]),
    );
  });

  it("prints each peer's time and rxccl's ratio to it, '-' where a peer measured no such row", () => {
    const lines: string[] = [];
    const row = (bytes: number, timeUs: number) => benchRow('allreduce', bytes, 2, timeUs);
    const gloo = new Map([[peerKey('allreduce', 8, 2), 200]]);
    const mpi = new Map([
      [peerKey('allreduce', 8, 2), 5],
      [peerKey('allreduce', 64, 2), 8],
    ]);
    const table = new NcclTable(
      (line) => lines.push(line),
      () => ({ kernels: 'native', node: 'v22' }),
      [
        { column: 'gloo', time: (r) => gloo.get(peerKey(r.op, r.bytes, r.worldSize)) },
        { column: 'mpi', time: (r) => mpi.get(peerKey(r.op, r.bytes, r.worldSize)) },
      ],
    );
    table.add(row(8, 100));
    table.add(row(64, 120));
    const cells = (line: string) => line.replace(/^#/, '').trim().split(/ +/);
    expect(cells(lines[1]!)).toEqual(['out-of-place', 'in-place']);
    expect(cells(lines[2]!)).toEqual(['size', 'count', 'type', 'redop', 'root', 'time', 'algbw', 'busbw', '#wrong', 'time', 'algbw', 'busbw', '#wrong', 'gloo', 'ratio', 'mpi', 'ratio']);
    expect(cells(lines[3]!)).toEqual(['(B)', '(elements)', '(us)', '(GB/s)', '(GB/s)', '(us)', '(GB/s)', '(GB/s)', '(us)', '(us)']);
    // No in-place measurement in these rows: its four cells are '-'.
    expect(cells(lines[4]!).slice(8)).toEqual(['0', '-', '-', '-', '-', '200.00', '0.50', '5.00', '20.00']);
    expect(cells(lines[5]!).slice(8)).toEqual(['0', '-', '-', '-', '-', '-', '-', '8.00', '15.00']);
  });

  it('puts the in-place form beside the out-of-place one, takes the ratio to the form the peer runs, and says why a cell is empty when the block closes', () => {
    const lines: string[] = [];
    const reduced = { ...benchRow('allreduce', 8, 2, 100), inPlace: { ...benchRow('allreduce', 8, 2, 80) } };
    const mpi = new Map([[peerKey('allreduce', 8, 2), 40]]);
    const table = new NcclTable(
      (line) => lines.push(line),
      () => ({}),
      [{ column: 'mpi', time: (r) => mpi.get(peerKey(r.op, r.bytes, r.worldSize)), whyEmpty: (r) => `no ${r.op} here` }],
    );
    table.add(reduced);
    table.add(benchRow('alltoall', 8, 2, 300));
    table.add(benchRow('alltoall', 64, 2, 310));
    table.end(1);
    const cells = (line: string) => line.trim().split(/ +/);
    const rows = lines.filter((line) => /^ +\d/.test(line)).map(cells);
    // Out-of-place 100 us, in-place 80 us; Open MPI's all-reduce is in place: 80 / 40.
    expect(rows[0]!.slice(5)).toEqual(['100.00', '0.00', '0.00', '0', '80.00', '0.00', '0.00', '0', '40.00', '2.00']);
    expect(rows[1]!.slice(9)).toEqual(['-', '-', '-', '-', '-', '-']);
    // The group line stands over the columns it names, as nccl-tests prints it.
    const names = lines.find((line) => line.includes('#wrong'))!;
    const groups = lines[lines.indexOf(names) - 1]!;
    expect(groups.indexOf('out-of-place') + 'out-of-place'.length).toBe(names.indexOf('#wrong') + '#wrong'.length);
    expect(groups.length).toBe(names.lastIndexOf('#wrong') + '#wrong'.length);
    expect(lines).toContain('# (alltoall has no in-place form: its in-place columns stay empty)');
    // Each reason once, under its block, before the block's totals.
    expect(lines.filter((line) => line.startsWith('# mpi empty: '))).toEqual(['# mpi empty: no alltoall here']);
    expect(lines.indexOf('# mpi empty: no alltoall here')).toBeLessThan(lines.lastIndexOf('# Out of bounds values : 0 OK'));
  });

  it("says each world's process warm-up once, under its first block's header", () => {
    const lines: string[] = [];
    const warmups = { 4: { worldSize: 4, calls: 3000, seconds: 2.04, firstUs: 812.4, lastUs: 301.6 } };
    const table = new NcclTable((line) => lines.push(line), () => ({ warmups }));
    table.add(benchRow('allreduce', 8, 2, 100));
    table.add(benchRow('allreduce', 8, 4, 300));
    table.add(benchRow('broadcast', 8, 4, 200));
    table.end(1);
    const said = '# warm-up: 3000 small calls in 2.0 s before the first row; a call took 812 us in the first 50 rounds, 302 us in the last';
    expect(lines.filter((line) => line.startsWith('# warm-up'))).toEqual([said]);
    // Under the 4-rank all-reduce block's header, before its first row.
    const header = lines.findIndex((line) => line.startsWith('# allreduce, 4 ranks'));
    expect(lines.indexOf(said)).toBeGreaterThan(header);
    expect(lines.indexOf(said)).toBeLessThan(lines.findIndex((line, index) => index > header && /^ +\d/.test(line)));
  });

  it('says why a peer cell is empty: no benchmark of the column measures it, the one that does is not run here, it failed, or it had no such row', () => {
    const cell = { op: 'reducescatter', bytes: 64, worldSize: 2 } as const;
    const states = (glooReduceScatter: Partial<PeerState>, mpi: Partial<PeerState> = {}): PeerState[] => [{ peer: GLOO }, { peer: GLOO_REDUCE_SCATTER, ...glooReduceScatter }, { peer: OPEN_MPI_TCP, ...mpi }];
    expect(whyEmpty({ ...cell, op: 'alltoall' }, 'gloo', states({}))).toBe(
      'no benchmark in this column measures alltoall (Gloo: allreduce, broadcast, allgather, barrier; Gloo (C++ library, reduce-scatter): reducescatter)',
    );
    expect(whyEmpty(cell, 'gloo', states({ notRun: 'no libgloo.so to link (Debian: apt-get install libgloo-dev)' }))).toBe(
      'Gloo (C++ library, reduce-scatter) not run: no libgloo.so to link (Debian: apt-get install libgloo-dev)',
    );
    expect(whyEmpty({ ...cell, op: 'allreduce' }, 'mpi', states({}, { failed: 'Open MPI over TCP at 2 ranks exited with 1: MPI_Abort was invoked' }))).toBe(
      'Open MPI over TCP at 2 ranks exited with 1: MPI_Abort was invoked',
    );
    expect(whyEmpty(cell, 'gloo', states({}))).toBe('Gloo (C++ library, reduce-scatter) reported no reducescatter row of 64 B at 2 ranks');
  });

  it("runs a peer's benchmark with the collectives it knows, reads its rows, and names it when it fails", async () => {
    const fake = (script: string) => ({
      description: 'node -e',
      command: (worldSize: number, ops: string, sizes: string) => ({ file: process.execPath, args: ['-e', script, String(worldSize), ops, sizes] }),
    });
    const echo = fake(`const [n, ops, sizes] = process.argv.slice(1); for (const op of ops.split(',')) process.stdout.write(['mpi-tcp', n, op, sizes, '12.5'].join('\\t') + '\\n');`);
    expect(await measurePeer(OPEN_MPI_TCP, echo, 3, ['allreduce', 'reducescatter', 'barrier'], [64], 30_000)).toEqual(
      new Map([
        ['allreduce/64/3', 12.5],
        ['barrier/64/3', 12.5],
      ]),
    );
    expect(await measurePeer(OPEN_MPI_TCP, echo, 2, ['alltoall'], [8], 30_000)).toEqual(new Map());
    const failing = fake(`process.stderr.write('first\\nMPI_Abort was invoked\\n'); process.exit(3);`);
    await expect(measurePeer(OPEN_MPI_TCP, failing, 2, ['allreduce'], [8], 30_000)).rejects.toThrow('Open MPI over TCP at 2 ranks exited with 3: MPI_Abort was invoked');
    const hanging = fake('setInterval(() => {}, 1000);');
    await expect(measurePeer(GLOO, hanging, 4, ['barrier'], [8], 200)).rejects.toThrow('Gloo at 4 ranks ran past 200 ms: ');
  });

  it('says why Open MPI cannot run: no benchmark source, no mpicc nor mpirun, an mpicc without mpi.h', () => {
    const saved = { PATH: process.env.PATH, RXCCL_PEERS_DIR: process.env.RXCCL_PEERS_DIR };
    const empty = mkdtempSync(join(tmpdir(), 'rxccl-peers-'));
    try {
      process.env.RXCCL_PEERS_DIR = empty;
      expect(OPEN_MPI_TCP.prepare()).toBe(`no ${join(empty, 'mpi_bench.c')} (set RXCCL_PEERS_DIR to the folder holding mpi_bench.c)`);
      writeFileSync(join(empty, 'mpi_bench.c'), 'int main(void) { return 0; }\n');
      process.env.PATH = empty;
      expect(OPEN_MPI_TCP.prepare()).toBe('no mpicc nor mpirun on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev)');
      // Debian's openmpi-bin alone: mpicc runs, but Open MPI's headers are in libopenmpi-dev.
      const headerless = 'if [ "$1" = --version ]; then exit 0; fi\necho "mpi_bench.c:1:10: fatal error: mpi.h: No such file or directory" >&2\necho "compilation terminated." >&2\nexit 1\n';
      for (const tool of ['mpicc', 'mpirun']) writeFileSync(join(empty, tool), `#!/bin/sh\n${headerless}`, { mode: 0o755 });
      expect(OPEN_MPI_TCP.prepare()).toBe('mpicc finds no mpi.h (Debian: apt-get install libopenmpi-dev)');
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.RXCCL_PEERS_DIR === undefined) delete process.env.RXCCL_PEERS_DIR;
      else process.env.RXCCL_PEERS_DIR = saved.RXCCL_PEERS_DIR;
    }
  });
});

describe('rounds', () => {
  const row = (op: BenchOp, bytes: number, worldSize: number, timeUs: number, round: number): BenchRow => ({ ...benchRow(op, bytes, worldSize, timeUs), round });

  it("takes each cell's ratio within a round, so a slow window slows both sides of it alike", () => {
    // Round 2 ran in a window twice as slow for everyone: its ratio is still 0.5. The summary is
    // the median of the rounds' ratios (0.5, 0.5, 1.5: 0.5), not the ratio of the medians (150 / 200).
    const gloo = (us: number) => new Map([['gloo', new Map([[peerKey('allreduce', 8, 2), us]])]]);
    const cells = cellRounds(
      [
        { rows: [row('allreduce', 8, 2, 100, 1), row('barrier', 0, 2, 50, 1)], peers: gloo(200) },
        { rows: [row('allreduce', 8, 2, 200, 2), row('barrier', 0, 2, 70, 2)], peers: gloo(400) },
        { rows: [row('allreduce', 8, 2, 150, 3), row('barrier', 0, 2, 60, 3)], peers: gloo(100) },
      ],
      ['gloo', 'mpi'],
    );
    expect(cells).toEqual([
      {
        op: 'allreduce',
        bytes: 8,
        worldSize: 2,
        timesUs: [100, 200, 150],
        peers: [
          { column: 'gloo', timesUs: [200, 400, 100], ratios: [0.5, 0.5, 1.5] },
          { column: 'mpi', timesUs: [], ratios: [] },
        ],
      },
      {
        op: 'barrier',
        bytes: 0,
        worldSize: 2,
        timesUs: [50, 70, 60],
        peers: [
          { column: 'gloo', timesUs: [], ratios: [] },
          { column: 'mpi', timesUs: [], ratios: [] },
        ],
      },
    ]);
    const cells2 = (line: string) => line.replace(/^#/, '').trim().split(/ +/);
    const lines = formatRoundSummary(cells, 3);
    expect(lines[0]).toMatch(/^# Summary over 3 rounds: /);
    expect(cells2(lines[1]!)).toEqual(['op', 'size', 'ranks', 'rxccl(us)', 'gloo(us)', 'ratio', '(min-max)', 'mpi(us)', 'ratio', '(min-max)']);
    // Medians: rxccl 150, Gloo 200, ratio 0.5 (of 0.5, 0.5, 1.5), spread 0.50-1.50; '-' where a peer measured nothing.
    expect(cells2(lines[2]!)).toEqual(['allreduce', '8', '2', '150.00', '200.00', '0.50', '0.50-1.50', '-', '-', '-']);
    expect(cells2(lines[3]!)).toEqual(['barrier', '0', '2', '60.00', '-', '-', '-', '-', '-', '-']);
  });

  it('runs the rounds one after the other, each in blocks of its own, and sums them up', async () => {
    const result = await runRxccl(['bench', '-n', '2', '--op', 'allreduce', '--sizes', '8,1K', '-w', '1', '--iters', '2', '--rounds', '2']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines.filter((line) => line.startsWith('# round '))).toEqual(['# round 1 of 2, 2 ranks', '# round 2 of 2, 2 ranks']);
    // Each round opens its own block (header and column lines), with both sizes.
    const second = lines.indexOf('# round 2 of 2, 2 ranks');
    expect(lines.slice(0, second).filter((line) => /^ +\d/.test(line))).toHaveLength(2);
    expect(lines[second + 1]).toMatch(/^# allreduce, 2 ranks, transport /);
    const summary = lines.findIndex((line) => line.startsWith('# Summary over 2 rounds'));
    expect(summary).toBeGreaterThan(second);
    const summed = lines.slice(summary + 2, summary + 4).map((line) => line.replace(/^#/, '').trim().split(/ +/));
    expect(summed.map((cells) => cells.slice(0, 3))).toEqual([
      ['allreduce', '8', '2'],
      ['allreduce', '1024', '2'],
    ]);
    for (const cells of summed) expect(Number(cells[3])).toBeGreaterThan(0);
  }, 60_000);

  it('--json gives every row its round and every cell its times over the rounds', async () => {
    const result = await runRxccl(['bench', '-n', '2', '--op', 'barrier', '-w', '1', '--iters', '2', '--rounds', '2', '--json']);
    expect(result.code).toBe(0);
    const { rows, rounds } = JSON.parse(result.stdout) as { rows: BenchRow[]; rounds: { op: string; timesUs: number[] }[] };
    expect(rows.map((measured) => measured.round)).toEqual([1, 2]);
    expect(rounds).toEqual([{ op: 'barrier', bytes: 0, worldSize: 2, timesUs: rows.map((measured) => measured.timeUs), peers: [] }]);
  }, 60_000);

  it('refuses zero rounds before starting anything', async () => {
    const result = await runRxccl(['bench', '--rounds', '0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--rounds/);
  });
});

describe('rxccl bench', () => {
  it('takes nccl-tests flags and prints nccl-tests rows with #wrong and the average bus bandwidth', async () => {
    const result = await runRxccl(['bench', '-n', '2', '--op', 'allreduce,broadcast', '-b', '1K', '-e', '4K', '-f', '2', '-w', '1', '--iters', '3', '-d', 'bf16', '--peers']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    // The peers' benchmarks measure f32 only: one line each says so, and the bench goes on.
    expect(lines.slice(0, 2)).toEqual([
      '# peers: Gloo not run: its benchmark measures f32 only, not bf16',
      '# peers: Open MPI over TCP not run: its benchmark measures f32 only, not bf16',
    ]);
    expect(lines.find((line) => line.includes('#wrong'))).toMatch(/^# +size +count +type +redop +root +time +algbw +busbw +#wrong/);
    const rows = lines.filter((line) => /^ +\d/.test(line)).map((line) => line.trim().split(/ +/));
    expect(rows.map((row) => row.slice(0, 5))).toEqual([
      ['1024', '512', 'bf16', 'sum', '-1'],
      ['2048', '1024', 'bf16', 'sum', '-1'],
      ['4096', '2048', 'bf16', 'sum', '-1'],
      ['1024', '512', 'bf16', 'none', '0'],
      ['2048', '1024', 'bf16', 'none', '0'],
      ['4096', '2048', 'bf16', 'none', '0'],
    ]);
    for (const row of rows) {
      // Out-of-place, then in-place: time, algbw and busbw with two decimals; no wrong element.
      expect(row.slice(5, 8).every((cell) => /^\d+\.\d\d$/.test(cell))).toBe(true);
      expect(row[8]).toBe('0');
      expect(row.slice(9, 12).every((cell) => /^\d+\.\d\d$/.test(cell))).toBe(true);
      expect(row[12]).toBe('0');
    }
    expect(lines.filter((line) => line === '# Out of bounds values : 0 OK')).toHaveLength(2);
    expect(lines.filter((line) => /^# Avg bus bandwidth {4}: \d+\.\d{3}$/.test(line))).toHaveLength(2);
  }, 60_000);

  it('--peers measures Open MPI over TCP beside rxccl, with its time and the ratio in the row, where mpicc and mpirun are installed', async () => {
    const result = await runRxccl(['bench', '--peers', '-n', '2', '--op', 'allreduce,alltoall', '--sizes', '8', '--iters', '2']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    const missing = ['mpicc', 'mpirun'].filter((tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).error !== undefined);
    const source = join(peersDirectory(), 'mpi_bench.c');
    if (missing.length === 0 && !existsSync(source)) {
      console.info(`no ${source} here (a checkout without ../shared/peers): only the "not run" line of Open MPI is checked`);
      expect(lines).toContain(`# peers: Open MPI over TCP not run: no ${source} (set RXCCL_PEERS_DIR to the folder holding mpi_bench.c)`);
      return;
    }
    if (missing.length > 0) {
      console.info(`no ${missing.join(' nor ')} here (apt-get install openmpi-bin libopenmpi-dev): only the "not run" line of Open MPI is checked`);
      expect(lines).toContain(`# peers: Open MPI over TCP not run: no ${missing.join(' nor ')} on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev)`);
      return;
    }
    if (spawnSync('mpicc', ['-E', '-x', 'c', '-'], { input: '#include <mpi.h>\n', stdio: ['pipe', 'ignore', 'ignore'] }).status !== 0) {
      console.info('mpicc here finds no mpi.h (apt-get install libopenmpi-dev): only the "not run" line of Open MPI is checked');
      expect(lines).toContain('# peers: Open MPI over TCP not run: mpicc finds no mpi.h (Debian: apt-get install libopenmpi-dev)');
      return;
    }
    expect(lines.filter((line) => line.startsWith('# peers: ') && line.includes('Open MPI'))).toEqual([
      expect.stringMatching(/^# peers: measuring Open MPI over TCP at 2 ranks \(mpirun \S+mpi_bench\)$/),
    ]);
    const header = lines.find((line) => line.includes('#wrong'))!.replace(/^#/, '').trim().split(/ +/);
    const rows = lines.filter((line) => /^ +\d/.test(line)).map((line) => line.trim().split(/ +/));
    expect(rows).toHaveLength(2);
    const mpi = header.indexOf('mpi');
    expect(header[mpi + 1]).toBe('ratio');
    const [mpiUs, ratio] = [Number(rows[0]![mpi]), Number(rows[0]![mpi + 1])];
    expect(mpiUs).toBeGreaterThan(0);
    // Open MPI reduces in place (MPI_IN_PLACE): the ratio is to rxccl's in-place time.
    expect(ratio).toBeCloseTo(Number(rows[0]![9]) / mpiUs, 1);
    // mpi_bench.c has no all-to-all: the cell is empty, and the line under the block says why.
    expect(rows[1]!.slice(mpi, mpi + 2)).toEqual(['-', '-']);
    expect(lines).toContain('# mpi empty: no benchmark in this column measures alltoall (Open MPI over TCP: allreduce, broadcast, allgather, barrier)');
  }, 120_000);

  it('fixes the warm-up and iteration counts with -w and --iters', async () => {
    const result = await runRxccl(['bench', '-n', '2', '--op', 'allgather', '--sizes', '8,1K', '-w', '2', '--iters', '4', '--json']);
    expect(result.code).toBe(0);
    const { rows } = JSON.parse(result.stdout) as { rows: { bytes: number; iterations: number; warmup: number; wrong: number }[] };
    expect(rows.map(({ bytes, iterations, warmup, wrong }) => ({ bytes, iterations, warmup, wrong }))).toEqual([
      { bytes: 8, iterations: 4, warmup: 3, wrong: 0 },
      { bytes: 1024, iterations: 4, warmup: 3, wrong: 0 },
    ]);
  }, 60_000);

  it('says its plan and an estimate first, and --quick measures three sizes at 2 ranks, both forms where there are two', async () => {
    const result = await runRxccl(['bench', '--quick', '--op', 'allreduce,alltoall']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe('# plan: allreduce, alltoall at 8 B..1 MiB (3 sizes), 2 ranks, out-of-place and in-place, 1 round (--quick)');
    expect(lines[1]).toMatch(/^# estimate: about \d+ (s|min( \d+ s)?) \(a model of a-priori call times on an idle host, not a measurement(; this host's load average is \d+\.\d on \d+ cores: expect longer)?\)$/);
    const rows = lines.filter((line) => /^ +\d/.test(line)).map((line) => line.trim().split(/ +/));
    expect(rows.map((row) => row.slice(0, 2))).toEqual([
      ['8', '2'],
      ['65536', '16384'],
      ['1048576', '262144'],
      ['8', '2'],
      ['65536', '16384'],
      ['1048576', '262144'],
    ]);
    // All-reduce in both forms; all-to-all has no in-place form, and the block says so.
    for (const row of rows.slice(0, 3)) expect(row.slice(9, 13).map((cell) => cell === '-')).toEqual([false, false, false, false]);
    for (const row of rows.slice(3)) expect(row.slice(9, 13)).toEqual(['-', '-', '-', '-']);
    expect(lines).toContain('# (alltoall has no in-place form: its in-place columns stay empty)');
  }, 60_000);

  it('estimates the shorter run shorter: --quick below the default, one round below three', () => {
    const plans = (sizes: number[], worldSizes: number[]) => worldSizes.map((worldSize) => ({ worldSize, cells: sizes.map((bytes) => cellFor('allreduce', 'f32', bytes, worldSize)) }));
    const full = { plans: plans(sizeSweep(8, 64 << 20, 8), [2, 4]), budget: DEFAULT_BUDGET, inPlace: true, rounds: 1, peers: [OPEN_MPI_TCP] };
    const quick = { ...full, plans: plans([...QUICK.sizes], [...QUICK.worldSizes]), budget: { ...DEFAULT_BUDGET, ...QUICK.budget } };
    expect(estimateSeconds(quick)).toBeLessThan(estimateSeconds(full) / 4);
    expect(estimateSeconds({ ...full, rounds: 3 })).toBeCloseTo(3 * estimateSeconds(full), 6);
    expect(estimateSeconds({ ...full, inPlace: false })).toBeLessThan(estimateSeconds(full));
    expect(estimateSeconds({ ...full, peers: [] })).toBeLessThan(estimateSeconds(full));
    expect([formatDuration(0.2), formatDuration(44.6), formatDuration(160), formatDuration(181)]).toEqual(['about 1 s', 'about 45 s', 'about 2 min 40 s', 'about 3 min']);
  });

  it("counts the estimate's warm-up and sample calls as the worker does: about warmupMs and sampleMs of calls, or the fixed -w and --iters", () => {
    expect([warmupCalls(DEFAULT_BUDGET, 1), warmupCalls(DEFAULT_BUDGET, 1e-3)]).toEqual([40, DEFAULT_BUDGET.maxIterations]);
    // At least one warm-up call, unless one call alone outlasts the cell.
    const noWarmup = { ...DEFAULT_BUDGET, warmupMs: 0 };
    expect([warmupCalls(noWarmup, 1), warmupCalls(noWarmup, DEFAULT_BUDGET.cellMs + 1)]).toEqual([1, 0]);
    expect([callsPerSample(DEFAULT_BUDGET, 1, 8192), callsPerSample(DEFAULT_BUDGET, 100, 8192)]).toEqual([20, 1]);
    // A small cell's samples batch 200 calls at least, as the peers' benchmarks do; more where calls are quick.
    expect([callsPerSample(DEFAULT_BUDGET, 2, 4096), callsPerSample(DEFAULT_BUDGET, 0.01, 8)]).toEqual([200, 2000]);
    const fixed = { ...DEFAULT_BUDGET, warmupIterations: 3, iterations: 5, minSamples: 2, maxSamples: 2, cellMs: 0 };
    expect([warmupCalls(fixed, 1), callsPerSample(fixed, 1, 8)]).toEqual([3, 5]);
    // The probe, 3 warm-up calls, 2 samples of 5, the checked call; no bytes to check.
    expect(formSeconds(0.01, 0, fixed)).toBeCloseTo((2 + 3 + 2 * 5) * 0.01, 9);
  });

  it("estimates the process warm-up as the longer of its time and its calls: the calls where ranks are many", () => {
    const run = (worldSize: number, processWarmupCalls: number) => ({ plans: [{ worldSize, cells: [cellFor('allreduce', 'f32', 8, worldSize)] }], budget: { ...DEFAULT_BUDGET, processWarmupCalls }, inPlace: true, rounds: 1, peers: [] });
    // 2 ranks: 3,000 calls of 150 us take 0.45 s, under the 2 s.
    expect(estimateSeconds(run(2, 3000))).toBeCloseTo(estimateSeconds(run(2, 0)), 9);
    // 32 ranks: 3,000 calls of 31 x 150 us (and 8 B each) take 14 s.
    expect(estimateSeconds(run(32, 3000)) - estimateSeconds(run(32, 0))).toBeCloseTo(3000 * 31 * 150e-6 - 2, 3);
  });

  it('ends with status 141, as SIGPIPE ends a C tool, once the reader of its rows is gone (rxccl bench | head -1)', async () => {
    const bench = startRxccl(['bench', '-n', '2', '--op', 'allreduce', '--sizes', '8,16,32,64,128,256', '--iters', '2']);
    await bench.firstLine();
    bench.child.stdout!.destroy();
    const result = await bench.finished;
    expect(result.code).toBe(141);
    expect(result.stderr).toBe('');
  }, 60_000);
});

/** Whether this machine lets the bench build its hosts (Linux, root, iproute2, namespaces): null, else why not. */
function hostsUnavailable(): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'building network namespaces needs root';
  try {
    // What the bench itself builds, once: a container may list namespaces but not make them.
    HostNamespaces.up(1).down();
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

const noHosts = hostsUnavailable();
if (noHosts !== null) console.info(`rxccl bench --hosts not run here: ${noHosts}`);

describe('rxccl bench --hosts', () => {
  it('places rank r of N on host floor(r*H/N), in the shell as in code', () => {
    const hosts = new HostNamespaces(2);
    expect([0, 1, 2, 3].map((rank) => hosts.hostOf(rank, 4))).toEqual([0, 0, 1, 1]);
    expect([0, 1].map((rank) => hosts.hostOf(rank, 2))).toEqual([0, 1]);
    for (const rank of [0, 1, 2, 3]) {
      const shell = spawnSync('bash', ['-c', `echo ${hosts.rankNamespace('RANK', 4)}`], { env: { ...process.env, RANK: String(rank) }, encoding: 'utf8' });
      expect(shell.stdout.trim()).toBe(hosts.namespace(hosts.hostOf(rank, 4)));
    }
  });

  it('refuses --host-rate without --hosts before starting anything', async () => {
    const result = await runRxccl(['bench', '--host-rate', '1gbit']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--host-rate needs --hosts');
  });

  it.skipIf(noHosts !== null)('runs 4 ranks on 2 hosts (network namespaces) on tcp_peer, every result right, and removes the hosts after', async () => {
    const result = await runRxccl(['bench', '-n', '4', '--op', 'allreduce,broadcast', '--sizes', '8,1M', '--iters', '2', '--transport', 'tcp_peer', '--hosts', '2', '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const { rows } = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { rows: { op: string; bytes: number; wrong: number }[] };
    expect(rows.map(({ op, bytes, wrong }) => [op, bytes, wrong])).toEqual([
      ['allreduce', 8, 0],
      ['allreduce', 1048576, 0],
      ['broadcast', 8, 0],
      ['broadcast', 1048576, 0],
    ]);
    expect(result.stdout).toMatch(/^# hosts: 2 network namespaces \(10\.79\.0\.0\/24\); rank r of N on host floor\(r\*2\/N\)$/m);
    expect(spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout).not.toMatch(/^rxbh/m);
  }, 120_000);
});
