/**
 * What a cold rank process costs: the time a call of the first thousands of calls, block by
 * block, from the process's first collective on. Node runs a collective's JavaScript in its
 * interpreter, then compiles it (V8's optimizing compiler, on background threads that share the
 * cores with the ranks) after some thousands of calls; where ranks outnumber the cores that
 * phase is several times slower than the steady state, and lasts seconds.
 *
 *   npx tsx bench/cold-start/run.ts [-n 2,8,16] [--block 500] [--blocks 16] [--bytes 8] [--node-flags ';--no-opt']
 *
 * One tcp_peer job of `-n` rank processes (as `rxccl launch` starts them) per world size and per
 * entry of `--node-flags` (`;`-separated sets of node flags, the empty set being Node's default:
 * `--no-opt` runs without the optimizing compiler, `--interrupt-budget=4096` tiers up sooner).
 * Each rank makes `--blocks` blocks of `--block` all-reduces of `--bytes` (f32 sum, in place),
 * each block after a barrier, from its session's opening on (no warm-up: the warm-up is what is
 * measured). A line per job: per block the time a call (max over ranks, us), then the process
 * CPU a call (user + system, max over ranks, us).
 */
import { fileURLToPath } from 'node:url';
import { option, wholeNumber } from '../argv.js';
import { rankJobLines } from '../rank-job.js';
import { openSession } from '../../lib/launch/open-session.js';

const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** One rank of the job: its blocks, then per block the max over ranks of its time and CPU a call, from rank 0. */
async function rank(block: number, blocks: number, bytes: number): Promise<void> {
  const session = await openSession({ transport: 'tcp_peer' });
  const tensor = new Float32Array(Math.max(1, bytes / 4));
  const mine = new Float64Array(2 * blocks);
  for (let index = 0; index < blocks; index++) {
    await session.barrier();
    const [cpu, started] = [cpuMicros(), performance.now()];
    for (let call = 0; call < block; call++) await session.allReduce(tensor, 'sum', { inPlace: true });
    mine[index] = ((performance.now() - started) * 1e3) / block;
    mine[blocks + index] = (cpuMicros() - cpu) / block;
  }
  const most = await session.allReduce(mine, 'max');
  if (session.rank === 0) process.stdout.write(`COLD ${JSON.stringify({ timeUs: [...most.subarray(0, blocks)], cpuUs: [...most.subarray(blocks)] })}\n`);
  await session.close();
}

async function main(): Promise<void> {
  const worldSizes = option('-n', '2,8,16').split(',').map(Number);
  const block = wholeNumber('--block', 500, 1);
  const blocks = wholeNumber('--blocks', 16, 1);
  const bytes = wholeNumber('--bytes', 8, 1);
  const flagSets = option('--node-flags', '').split(';');
  console.log(`# ${bytes} B all-reduce, in place, tcp_peer; ${blocks} blocks of ${block} calls from each rank's first call; per block the time a call, then the process CPU a call (us, max over ranks)`);
  for (const worldSize of worldSizes) {
    for (const flags of flagSets) {
      const args = ['rank', String(block), String(blocks), String(bytes)];
      const nodeFlags = flags.split(' ').filter((flag) => flag.length > 0);
      const [cold] = await rankJobLines<{ timeUs: number[]; cpuUs: number[] }>(worldSize, fileURLToPath(import.meta.url), args, 'COLD', { nodeFlags });
      if (cold === undefined) throw new Error(`${worldSize} ranks, node flags '${flags}': no result line`);
      const { timeUs, cpuUs } = cold;
      const row = (values: number[]) => values.map((value) => value.toFixed(0)).join(' ');
      console.log(`${worldSize} ranks, node flags '${flags}':\n  time ${row(timeUs)}\n  cpu  ${row(cpuUs)}`);
    }
  }
}

if (process.argv[2] === 'rank') {
  await rank(Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5]));
} else {
  await main();
}
