/**
 * What one small collective costs each rank where ranks outnumber cores (bench/README.md, "Ranks
 * outnumbering cores"): run as a job, e.g.
 *
 *   GX1_SPIN_US=0 CALLS=1000 node bin/rxccl.mjs launch -n 8 -- node --import tsx bench/many-ranks/probe.ts
 *
 * Each rank makes CALLS back-to-back calls (OP: allreduce, the default, broadcast or barrier; BYTES,
 * default 8, in place) after 200 warm-up calls and a barrier, and measures over them its wall time,
 * its process's CPU time (user + system) and its threads' voluntary and involuntary context
 * switches (/proc/self/task/* /status). Rank 0 prints one `PROBE` line: the slowest rank's wall
 * time per call and the median rank's CPU time and switches per call.
 */
import { openSession } from '../../lib/index.js';
import { contextSwitches as switches } from './context-switches.js';

const calls = Number(process.env.CALLS ?? 2000);
const bytes = Number(process.env.BYTES ?? 8);
const op = process.env.OP ?? 'allreduce';
const session = await openSession();
const { rank, worldSize } = session;
const input = new Float32Array(Math.max(1, bytes / 4)).fill(rank + 1);

async function call(): Promise<void> {
  if (op === 'allreduce') await session.allReduce(input, 'sum', { inPlace: true });
  else if (op === 'broadcast') await session.broadcast(input, 0, { inPlace: true });
  else if (op === 'barrier') await session.barrier();
  else throw new Error(`OP must be allreduce, broadcast or barrier, got ${op}`);
}

for (let warm = 0; warm < 200; warm++) await call();
await session.barrier();
const switchesBefore = switches();
const cpuBefore = process.cpuUsage();
const started = performance.now();
for (let done = 0; done < calls; done++) await call();
const wallUs = ((performance.now() - started) * 1000) / calls;
const cpu = process.cpuUsage(cpuBefore);
const switchesAfter = switches();
const mine = Float64Array.of(wallUs, (cpu.user + cpu.system) / calls, cpu.system / calls, (switchesAfter.voluntary - switchesBefore.voluntary) / calls, (switchesAfter.involuntary - switchesBefore.involuntary) / calls);
const all = await session.allGather(mine);
if (rank === 0) {
  const ranks = Array.from({ length: worldSize }, (_, r) => all.subarray(5 * r, 5 * r + 5));
  const median = (column: number) => ranks.map((row) => row[column]!).sort((a, b) => a - b)[worldSize >> 1]!;
  console.log(
    `PROBE ranks ${worldSize} ${op} ${bytes} B: ${Math.max(...ranks.map((row) => row[0]!)).toFixed(0)} us per call (slowest rank); per rank and call (median): ` +
      `CPU ${median(1).toFixed(0)} us (system ${median(2).toFixed(0)}), voluntary switches ${median(3).toFixed(2)}, involuntary ${median(4).toFixed(2)}`,
  );
}
await session.close();
