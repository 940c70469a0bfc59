/**
 * Which row of the algorithm table wins where ranks outnumber cores (bench/README.md,
 * "Oversubscribed hosts"): run as a job, e.g.
 *
 *   CALLS=300 ROUNDS=11 node bin/rxccl.mjs launch -n 8 -- node --import tsx bench/many-ranks/rows.ts
 *
 * For each case (ONLY, a list of `collective:bytes`, default all-reduce, all-gather and broadcast
 * of 8 B and 1 KiB and the barrier) every native-plane row (ROWS, a list of names, default all but
 * the hierarchy) is forced in turn, ROUNDS times interleaved (default 5), each time CALLS calls
 * (default 200) after 20 warm-up calls and a barrier. A row is forced by narrowing the collective's
 * rows to it and the staged row on every rank alike, so every rank chooses it. Rank 0 prints per
 * case and row the medians over the rounds of the slowest rank's time per call, the host's CPU
 * time per call (every rank's user + system, summed) and its context switches per call (every
 * thread of every rank, voluntary and involuntary), then each round's time.
 */
import type { CollectiveName } from '../../lib/collectives/algorithm.js';
import { ALGORITHMS } from '../../lib/collectives/select.js';
import { openSession } from '../../lib/index.js';
import { contextSwitches } from './context-switches.js';

const calls = Number(process.env.CALLS ?? 200);
const rounds = Number(process.env.ROUNDS ?? 5);
const CASES: readonly (readonly [CollectiveName, number])[] = [
  ['allReduce', 8],
  ['allReduce', 1024],
  ['allGather', 8],
  ['allGather', 1024],
  ['broadcast', 8],
  ['broadcast', 1024],
  ['barrier', 0],
];
const cases = CASES.filter(([collective, bytes]) => process.env.ONLY === undefined || process.env.ONLY.split(',').includes(`${collective}:${bytes}`));
const wanted = process.env.ROWS?.split(',');
type Rows = Record<string, readonly { readonly name: string; readonly plane: string }[]>;
const table = ALGORITHMS as unknown as Rows;
const original: Rows = { ...table };

const session = await openSession();
const { rank, worldSize } = session;

/** The names of the collective's native rows that may run here (the hierarchy needs groups; the chain 3 ranks). */
const rowsOf = (collective: CollectiveName): string[] => {
  const names = ALGORITHMS[collective].filter((row) => row.plane === 'native' && row.name !== 'hierarchical' && (row.fits === undefined || worldSize >= 3)).map((row) => row.name);
  return [...new Set(names)].filter((name) => wanted === undefined || wanted.includes(name));
};

/** Only `name` and the staged row of `collective`, or every row again (null). */
function force(collective: CollectiveName, name: string | null): void {
  (table as Record<string, Rows[string]>)[collective] = name === null ? original[collective]! : original[collective]!.filter((row) => row.name === name || row.plane === 'coordinator');
}

/** Context switches of every thread of this process so far, of either kind. */
function switches(): number {
  const { voluntary, involuntary } = contextSwitches();
  return voluntary + involuntary;
}

async function call(collective: CollectiveName, input: Float32Array): Promise<void> {
  if (collective === 'allReduce') await session.allReduce(input, 'sum', { inPlace: true });
  else if (collective === 'broadcast') await session.broadcast(input, 0, { inPlace: true });
  else if (collective === 'allGather') await session.allGather(input);
  else await session.barrier();
}

const measured = new Map<string, { wall: number[]; cpu: number[]; switches: number[] }>();
for (let round = 0; round < rounds; round++) {
  for (const [collective, bytes] of cases) {
    const input = new Float32Array(Math.max(1, bytes / 4)).fill(rank + 1);
    for (const name of rowsOf(collective)) {
      force(collective, name);
      const ran = session.plan(collective, collective === 'barrier' ? 0 : input.byteLength).algorithm;
      for (let warm = 0; warm < 20; warm++) await call(collective, input);
      force(collective, null);
      await session.barrier();
      force(collective, name);
      const cpuBefore = process.cpuUsage();
      const switchesBefore = switches();
      const started = performance.now();
      for (let done = 0; done < calls; done++) await call(collective, input);
      const wallUs = ((performance.now() - started) * 1000) / calls;
      const cpu = process.cpuUsage(cpuBefore);
      const mine = Float64Array.of(wallUs, (cpu.user + cpu.system) / calls, (switches() - switchesBefore) / calls);
      force(collective, null);
      const all = await session.allGather(mine);
      const column = (index: number) => Array.from({ length: worldSize }, (_, r) => all[3 * r + index]!);
      const key = `${collective} ${bytes} B ${ran}`;
      const row = measured.get(key) ?? { wall: [], cpu: [], switches: [] };
      row.wall.push(Math.max(...column(0)));
      row.cpu.push(column(1).reduce((sum, value) => sum + value, 0));
      row.switches.push(column(2).reduce((sum, value) => sum + value, 0));
      measured.set(key, row);
    }
  }
}
if (rank === 0) {
  const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
  for (const [key, { wall, cpu, switches: switched }] of measured) {
    console.log(
      `ROWS ranks ${worldSize} ${key.padEnd(32)} ${median(wall).toFixed(0).padStart(6)} us per call, host CPU ${median(cpu).toFixed(0).padStart(6)} us, ` +
        `switches ${median(switched).toFixed(1).padStart(5)}; rounds ${wall.map((value) => value.toFixed(0)).join(' ')}`,
    );
  }
}
await session.close();
