/**
 * What waiting costs: a job in which the last rank arrives late at every call (it "computes"
 * `--late-ms` longer), and the CPU the other ranks burn meanwhile, per 100 calls, for each spin
 * setting of the native data plane (GX1_SPIN_US: auto, and any fixed ones given).
 *
 *   npx tsx bench/late-rank/run.ts [-n 2] [--late-ms 20] [--calls 100] [--bytes 8] [--spins auto,20000,0]
 *
 * One tcp_peer job of `-n` rank processes per setting (as `rxccl launch` starts them). Each rank
 * warms up with 200 back-to-back all-reduces, then makes `--calls` all-reduces of `--bytes` (f32
 * sum, in place), the last rank sleeping `--late-ms` before each. A line per setting: the CPU
 * seconds (user + system, the whole process) per 100 calls of the busiest waiting rank and of the
 * late one, and the time per call.
 */
import { fileURLToPath } from 'node:url';
import { LocalJob } from '../../lib/launch/local-job.js';
import { option, wholeNumber } from '../argv.js';
import { capturedOutput } from '../captured-output.js';
import { openSession } from '../../lib/launch/open-session.js';


const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/** One rank of the job: the calls, then its CPU per 100 calls (max over the waiting ranks) from rank 0. */
async function rank(lateMs: number, calls: number, bytes: number): Promise<void> {
  const session = await openSession({ transport: 'tcp_peer' });
  const tensor = new Float32Array(Math.max(1, bytes / 4));
  const late = session.rank === session.worldSize - 1;
  for (let index = 0; index < 200; index++) await session.allReduce(tensor, 'sum', { inPlace: true });
  await session.barrier();
  const [cpu, started] = [cpuSeconds(), performance.now()];
  for (let index = 0; index < calls; index++) {
    if (late) await new Promise((resolve) => setTimeout(resolve, lateMs));
    await session.allReduce(tensor, 'sum', { inPlace: true });
  }
  const per100 = ((cpuSeconds() - cpu) * 100) / calls;
  const callMs = (performance.now() - started) / calls;
  // [busiest waiting rank, the late rank, time per call], each the max over ranks.
  const mine = Float64Array.of(late ? 0 : per100, late ? per100 : 0, callMs);
  const most = await session.allReduce(mine, 'max');
  if (session.rank === 0) process.stdout.write(`LATE ${JSON.stringify({ waiting: most[0], late: most[1], callMs: most[2] })}\n`);
  await session.close();
}

async function main(): Promise<void> {
  const worldSize = wholeNumber('-n', 2, 0);
  const lateMs = wholeNumber('--late-ms', 20, 0);
  const calls = wholeNumber('--calls', 100, 0);
  const bytes = wholeNumber('--bytes', 8, 0);
  const spins = option('--spins', 'auto,20000,0').split(',');
  console.log(`# ${worldSize} ranks, tcp_peer, ${bytes} B all-reduce; the last rank ${lateMs} ms late at each of ${calls} calls`);
  console.log('# GX1_SPIN_US   waiting CPU s/100 calls   late CPU s/100 calls   ms/call');
  for (const spin of spins) {
    const captured = capturedOutput();
    const script = fileURLToPath(import.meta.url);
    const job = await LocalJob.start({
      worldSize,
      command: process.execPath,
      args: ['--import', 'tsx', script, 'rank', String(lateMs), String(calls), String(bytes)],
      transport: 'tcp_peer',
      env: { ...process.env, GX1_SPIN_US: spin },
      stdout: captured.stream,
      stderr: process.stderr,
    });
    const outcome = await job.outcome;
    const line = captured.text().split('\n').find((text) => text.includes('LATE '));
    if (!outcome.ok || line === undefined) throw new Error(`GX1_SPIN_US=${spin}: ${outcome.failure ?? 'no result line'}`);
    const { waiting, late, callMs } = JSON.parse(line.slice(line.indexOf('LATE ') + 5)) as { waiting: number; late: number; callMs: number };
    console.log(`  ${spin.padEnd(13)} ${waiting.toFixed(3).padStart(24)} ${late.toFixed(3).padStart(22)} ${callMs.toFixed(2).padStart(9)}`);
  }
}

if (process.argv[2] === 'rank') {
  await rank(Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5]));
} else {
  await main();
}
