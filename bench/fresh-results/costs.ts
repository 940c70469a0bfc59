/**
 * Where the default call's time goes beside the in-place one (bench/README.md, "Where the default
 * call's time goes"): per form (a fresh result, an output given, in place) the wall time per call,
 * and per call what the load of a shared machine hides less than times do, per thread of rank 0's
 * process: page faults and CPU of the event loop, of the other threads (the engine's, V8's helpers;
 * the pool's thread `rxccl-results` is counted only while it runs), and the collector's pauses by
 * kind (scavenge, full collection, incremental marking) from 'gc' performance entries.
 *
 *   npx tsx bench/fresh-results/costs.ts [-n 2] [--sizes 1M,64M] [--mib 640] [--rounds 2]
 *
 * One tcp_peer job of `-n` rank processes, default settings. Per size, `--rounds` rounds (after
 * one thrown away) of each form in turn, each of as many calls as make `--mib` MiB (at least 10).
 * Page faults counted by the kernel only: on a virtual machine whose host shadows page tables, a
 * first touch costs without being one (docs/architecture.md, "Fresh results").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { bytesOf, option } from '../argv.js';
import { rankJobLines } from '../rank-job.js';
import { openSession } from '../../lib/launch/open-session.js';
import { allReduceForms } from './forms.js';

/** One thread's counters: minor page faults and CPU (ms), from /proc/self/task/<tid>/stat. */
interface ThreadCounters {
  readonly eventLoop: boolean;
  readonly faults: number;
  readonly cpuMs: number;
}

/** Every thread of this process now, by thread id. */
function threads(): Map<string, ThreadCounters> {
  const ticksMs = 10; // USER_HZ is 100 on Linux
  const found = new Map<string, ThreadCounters>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces): state is field 3, minflt 10, utime 14, stime 15.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      found.set(tid, { eventLoop: tid === String(process.pid), faults: Number(fields[7]), cpuMs: (Number(fields[11]) + Number(fields[12])) * ticksMs });
    } catch {
      // (a thread that ended while we looked)
    }
  }
  return found;
}

/** Faults and CPU per call of the event loop and of the other threads between two readings. */
function perCall(before: Map<string, ThreadCounters>, after: Map<string, ThreadCounters>, calls: number) {
  const sums = { loopFaults: 0, loopCpuMs: 0, otherFaults: 0, otherCpuMs: 0 };
  for (const [tid, now] of after) {
    const then = before.get(tid) ?? { faults: 0, cpuMs: 0 };
    if (now.eventLoop) {
      sums.loopFaults += now.faults - then.faults;
      sums.loopCpuMs += now.cpuMs - then.cpuMs;
    } else {
      sums.otherFaults += now.faults - then.faults;
      sums.otherCpuMs += now.cpuMs - then.cpuMs;
    }
  }
  return Object.fromEntries(Object.entries(sums).map(([name, value]) => [name, value / calls]));
}

/** The collector's pauses since the last `take()`, per kind: how many and how long (ms). */
function collectorPauses() {
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'full',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'marking',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak',
  };
  let pauses: Record<string, { count: number; ms: number }> = {};
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = kinds[(entry as unknown as { detail: { kind: number } }).detail.kind] ?? 'other';
      pauses[kind] ??= { count: 0, ms: 0 };
      pauses[kind].count++;
      pauses[kind].ms += entry.duration;
    }
  }).observe({ entryTypes: ['gc'] });
  return {
    take(calls: number) {
      const taken = Object.fromEntries(Object.entries(pauses).map(([kind, { count, ms }]) => [kind, { perCall: count / calls, msPerCall: ms / calls }]));
      pauses = {};
      return taken;
    },
  };
}

/** One rank: per size and round, each form's calls; rank 0 prints its counters per form. */
async function rank(sizes: readonly number[], mib: number, rounds: number): Promise<void> {
  const session = await openSession({ transport: 'tcp_peer' });
  const pauses = collectorPauses();
  for (const bytes of sizes) {
    const forms = allReduceForms(session, bytes);
    const calls = Math.max(10, Math.round((mib * 2 ** 20) / bytes));
    for (let round = 0; round <= rounds; round++) {
      for (const [form, call] of Object.entries(forms)) {
        await session.barrier();
        pauses.take(1);
        const before = threads();
        const started = performance.now();
        for (let index = 0; index < calls; index++) await call();
        const ms = (performance.now() - started) / calls;
        // The pauses of the last call's collections are reported a turn of the event loop later.
        await new Promise((resolve) => setTimeout(resolve, 5));
        const counters = perCall(before, threads(), calls);
        const collector = pauses.take(calls);
        // The first round warms up: thrown away.
        if (round > 0 && session.rank === 0) process.stdout.write(`COSTS ${JSON.stringify({ bytes, form, round, ms, ...counters, collector })}\n`);
      }
    }
  }
  await session.close();
}

async function main(): Promise<void> {
  const worldSize = Number(option('-n', '2'));
  const sizes = option('--sizes', '1M,64M').split(',').map(bytesOf);
  const mib = Number(option('--mib', '640'));
  const rounds = Number(option('--rounds', '2'));
  console.log(`# all-reduce f32 sum, ${worldSize} ranks, tcp_peer, default settings; rank 0, per call: wall ms, page faults and CPU ms of the event loop and of the other threads, collections (count, ms)`);
  const lines = await rankJobLines<{ bytes: number; form: string; round: number; ms: number; loopFaults: number; loopCpuMs: number; otherFaults: number; otherCpuMs: number; collector: Record<string, { perCall: number; msPerCall: number }> }>(
    worldSize,
    fileURLToPath(import.meta.url),
    ['rank', sizes.join(','), String(mib), String(rounds)],
    'COSTS',
  );
  console.log('# size  form  round  wall  loop faults  loop cpu  other faults  other cpu  collections');
  for (const line of lines) {
    const collections = Object.entries(line.collector).map(([kind, { perCall: count, msPerCall }]) => `${kind} ${count.toFixed(2)}x ${msPerCall.toFixed(2)}ms`);
    const cells = [line.ms.toFixed(2), line.loopFaults.toFixed(0), line.loopCpuMs.toFixed(2), line.otherFaults.toFixed(0), line.otherCpuMs.toFixed(2)];
    console.log(`${line.bytes}  ${line.form}  ${line.round}  ${cells.join('  ')}  ${collections.join(', ') || '-'}`);
  }
}

if (process.argv[2] === 'rank') {
  await rank(process.argv[3]!.split(',').map(Number), Number(process.argv[4]), Number(process.argv[5]));
} else {
  await main();
}
