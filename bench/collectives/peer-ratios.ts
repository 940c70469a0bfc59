/**
 * Compares `--json` runs of the collectives bench with the peer anchors measured on this machine
 * (../shared/peers/RESULTS.md, "Headline" table: Gloo and Open MPI over TCP, allreduce at 8 B,
 * 1 MiB and 64 MiB, and barrier, at 2 and 4 ranks):
 *
 *   npx tsx bench/collectives/run.ts --json --ops allreduce,barrier --sizes 8,1048576,67108864 > a.json
 *   npx tsx bench/collectives/peer-ratios.ts a.json [b.json ...]
 *
 * With several runs, each cell is the median of the runs' times. Ratio = rxccl time / peer time
 * (above 1: rxccl is slower).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './plan.js';
import { median } from '../../lib/diagnostics/median.js';

/** Median µs of invocation A and B (5 runs each) from the peers' headline table. */
export const PEER_ANCHORS: readonly { op: 'allreduce' | 'barrier'; bytes: number; worldSize: number; peer: string; a: number; b: number }[] = [
  { op: 'allreduce', bytes: 8, worldSize: 2, peer: 'gloo', a: 187, b: 175 },
  { op: 'allreduce', bytes: 8, worldSize: 2, peer: 'mpi-tcp', a: 4.5, b: 4.8 },
  { op: 'allreduce', bytes: 8, worldSize: 4, peer: 'gloo', a: 1020, b: 996 },
  { op: 'allreduce', bytes: 8, worldSize: 4, peer: 'mpi-tcp', a: 23.3, b: 21.4 },
  { op: 'allreduce', bytes: 1048576, worldSize: 2, peer: 'gloo', a: 2197, b: 2331 },
  { op: 'allreduce', bytes: 1048576, worldSize: 2, peer: 'mpi-tcp', a: 233, b: 238 },
  { op: 'allreduce', bytes: 1048576, worldSize: 4, peer: 'gloo', a: 5005, b: 4928 },
  { op: 'allreduce', bytes: 1048576, worldSize: 4, peer: 'mpi-tcp', a: 700, b: 737 },
  { op: 'allreduce', bytes: 67108864, worldSize: 2, peer: 'gloo', a: 54819, b: 53930 },
  { op: 'allreduce', bytes: 67108864, worldSize: 2, peer: 'mpi-tcp', a: 47865, b: 49047 },
  { op: 'allreduce', bytes: 67108864, worldSize: 4, peer: 'gloo', a: 121238, b: 121424 },
  { op: 'allreduce', bytes: 67108864, worldSize: 4, peer: 'mpi-tcp', a: 139482, b: 133933 },
  { op: 'barrier', bytes: 0, worldSize: 2, peer: 'gloo', a: 164, b: 145 },
  { op: 'barrier', bytes: 0, worldSize: 2, peer: 'mpi-tcp', a: 4.6, b: 4.9 },
  { op: 'barrier', bytes: 0, worldSize: 4, peer: 'gloo', a: 1803, b: 1880 },
  { op: 'barrier', bytes: 0, worldSize: 4, peer: 'mpi-tcp', a: 19.9, b: 23.3 },
];


function us(value: number): string {
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1);
}

/** Markdown table: one line per (op, size, world), our median time, each peer's time and the ratio. */
export function peerRatioTable(runs: readonly (readonly BenchRow[])[]): string {
  const lines = [
    '| op | size | ranks | rxccl µs (runs) | Gloo µs (A / B) | rxccl / Gloo | MPI-TCP µs (A / B) | rxccl / MPI-TCP |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const keys = [...new Set(PEER_ANCHORS.map((anchor) => `${anchor.op}/${anchor.bytes}/${anchor.worldSize}`))];
  for (const key of keys) {
    const [op, bytesText, worldText] = key.split('/') as [string, string, string];
    const bytes = Number(bytesText);
    const worldSize = Number(worldText);
    const ours = runs.flatMap((rows) => rows.filter((row) => row.op === op && row.bytes === bytes && row.worldSize === worldSize).map((row) => row.timeUs));
    if (ours.length === 0) continue;
    const mine = median(ours);
    const peer = (name: string) => PEER_ANCHORS.find((anchor) => `${anchor.op}/${anchor.bytes}/${anchor.worldSize}` === key && anchor.peer === name)!;
    const gloo = peer('gloo');
    const mpi = peer('mpi-tcp');
    const size = bytes === 0 ? '-' : bytes >= 1048576 ? `${bytes / 1048576} MiB` : `${bytes} B`;
    lines.push(
      `| ${op} | ${size} | ${worldSize} | ${us(mine)} (${ours.map(us).join(', ')}) | ${us(gloo.a)} / ${us(gloo.b)} | ${(mine / gloo.a).toFixed(2)}x | ` +
        `${us(mpi.a)} / ${us(mpi.b)} | ${(mine / mpi.a).toFixed(1)}x |`,
    );
  }
  return lines.join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    process.stderr.write('usage: npx tsx bench/collectives/peer-ratios.ts RUN.json [RUN.json ...]\n');
    process.exit(2);
  }
  const runs = files.map((file) => (JSON.parse(readFileSync(file, 'utf8')) as { rows: BenchRow[] }).rows);
  process.stdout.write(`${peerRatioTable(runs)}\n`);
}
