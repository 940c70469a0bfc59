/**
 * `rxccl bench --peers`: torch.distributed's Gloo backend measured on this host beside rxccl, by
 * the peers' own script (gloo_bench.py in ../shared/peers next to the checkout, or in
 * $RXCCL_PEERS_DIR), so that each row can show rxccl's time over Gloo's. It needs a python3 that
 * can import torch (Debian: apt-get install python3-torch).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../lib/kernels/addon.js';
import type { BenchOp } from './plan.js';

/** The collectives gloo_bench.py measures. */
const GLOO_OPS: readonly BenchOp[] = ['allreduce', 'broadcast', 'allgather', 'barrier'];
/** Debian's interpreter first: its python3-torch is what the peers' results were measured with. */
const PYTHONS = ['/usr/bin/python3', 'python3'];

export interface GlooPeer {
  readonly python: string;
  readonly script: string;
}

/** The Gloo peer to run, or why there is none (one line). */
export function findGloo(): GlooPeer | string {
  const script = join(process.env.RXCCL_PEERS_DIR ?? join(packageRoot(), '..', 'shared', 'peers'), 'gloo_bench.py');
  if (!existsSync(script)) return `no ${script} (set RXCCL_PEERS_DIR to the folder holding gloo_bench.py)`;
  const python = PYTHONS.find((candidate) => spawnSync(candidate, ['-c', 'import torch'], { stdio: 'ignore', timeout: 60_000 }).status === 0);
  if (python === undefined) return 'python3 cannot import torch (Debian: apt-get install python3-torch)';
  return { python, script };
}

/** The key of a measurement: a collective at a size in bytes on a number of ranks. */
export function peerKey(op: string, bytes: number, worldSize: number): string {
  return `${op}/${bytes}/${worldSize}`;
}

/**
 * Runs gloo_bench.py for one world size on the collectives it knows among `ops`, at `sizes`
 * (bytes of f32, as ours); resolves with its median microseconds by peerKey.
 */
export async function measureGloo(peer: GlooPeer, worldSize: number, ops: readonly BenchOp[], sizes: readonly number[]): Promise<Map<string, number>> {
  const measured = ops.filter((op) => GLOO_OPS.includes(op));
  if (measured.length === 0) return new Map();
  const child = spawn(peer.python, [peer.script, '--world', String(worldSize), '--ops', measured.join(','), '--sizes', sizes.join(','), '--tag', 'rxccl-bench'], {
    env: { ...process.env, OMP_NUM_THREADS: '1', GLOO_SOCKET_IFNAME: 'lo' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`gloo_bench.py --world ${worldSize} exited with ${code}: ${stderr.trim().split('\n').at(-1) ?? ''}`);
  return parseGlooRows(stdout);
}

/** gloo_bench.py's rows: `gloo <world> <op> <bytes> <median_us> ...`, tab-separated; `#` starts a comment. */
export function parseGlooRows(text: string): Map<string, number> {
  const times = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [peer, world, op, bytes, median] = line.split('\t');
    if (peer !== 'gloo' || median === undefined) continue;
    times.set(peerKey(op!, Number(bytes), Number(world)), Number(median));
  }
  return times;
}
