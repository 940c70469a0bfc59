/**
 * Soak: a job that runs back-to-back all-reduces for a while and prints its memory over time, to
 * see that nothing grows (leaked buffers, listeners, sockets, pending handshakes).
 *
 *   npx tsx bench/soak/run.ts [--seconds 60] [--interval 5] [-n 2] [--bytes 8] [--transport tcp_peer]
 *
 * The coordinator (with a generated secret, as `rxccl launch` has) and every rank run in this
 * process, so the RSS printed is the whole job's. Each line: elapsed seconds, all-reduces done
 * (per rank), their rate, RSS, V8 heap used and external memory (MiB). The last line compares
 * the RSS of the second sample (after warm-up) with the last.
 */
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { openSession } from '../../lib/launch/open-session.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { generateSecret } from '../../lib/transport/job-secret.js';
import { parseTransport } from '../../lib/transport/transport-kind.js';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  const value = at < 0 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${process.argv[at + 1]}`);
  return value;
}

const seconds = option('--seconds', 60);
const interval = option('--interval', 5);
const worldSize = option('-n', 2);
const bytes = option('--bytes', 8);
const transportAt = process.argv.indexOf('--transport');
const transport = parseTransport(transportAt < 0 ? 'tcp_host_staged' : process.argv[transportAt + 1]!);

const mib = (value: number) => (value / 2 ** 20).toFixed(1);
const secret = generateSecret();
const uniqueId = UniqueId.random();
const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize, transport, secret }, {});
const sessions = await Promise.all(
  Array.from({ length: worldSize }, (_, rank) =>
    openSession({ coordinator: `127.0.0.1:${coordinator.address.port}`, uniqueId, rank, worldSize, transport, secret }),
  ),
);

let done = 0;
const started = Date.now();
const deadline = started + seconds * 1_000;
const samples: number[] = [];
const sample = () => {
  const memory = process.memoryUsage();
  samples.push(memory.rss);
  const elapsed = (Date.now() - started) / 1_000;
  console.log(
    `${elapsed.toFixed(0).padStart(6)} s ${String(done).padStart(10)} ops ${(done / Math.max(elapsed, 1e-3)).toFixed(0).padStart(8)} ops/s` +
      `  rss ${mib(memory.rss).padStart(8)} MiB  heap ${mib(memory.heapUsed).padStart(7)} MiB  external ${mib(memory.external).padStart(7)} MiB`,
  );
};
console.log(`soak: ${worldSize} ranks, ${transport}, all-reduce of ${bytes} B, ${seconds} s`);
sample();
const timer = setInterval(sample, interval * 1_000);
await Promise.all(
  sessions.map(async (session) => {
    const data = new Uint8Array(bytes).fill(session.rank + 1);
    while (Date.now() < deadline) {
      await session.allReduce(data, 'max');
      if (session.rank === 0) done += 1;
    }
  }),
);
clearInterval(timer);
sample();
await Promise.all(sessions.map((session) => session.close()));
await coordinator.done;
const settled = samples[Math.min(1, samples.length - 1)]!;
console.log(`rss after warm-up ${mib(settled)} MiB, at the end ${mib(samples.at(-1)!)} MiB (${mib(samples.at(-1)! - settled)} MiB difference)`);
