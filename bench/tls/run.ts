/**
 * What TLS costs: the same all-reduce (f32 sum, 2 ranks) with and without TLS, on both
 * transports, at 8 B, 1 MiB and 64 MiB, every connection also authenticated with a job secret.
 *
 *   npx tsx bench/tls/run.ts
 *
 * Coordinator and ranks run in this process (so both ends of every TLS connection share its
 * cores): the figures compare the two settings, they are not the collectives bench's. Each cell
 * is the median time of back-to-back calls after a warm-up.
 */
import { readFileSync } from 'node:fs';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { openSession } from '../../lib/launch/open-session.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { generateSecret } from '../../lib/transport/job-secret.js';
import type { TlsOptions } from '../../lib/transport/tls-settings.js';

const fixture = (name: string) => readFileSync(new URL(`../../spec/security/fixtures/tls/${name}`, import.meta.url));
const TLS: TlsOptions = { cert: fixture('job.pem'), key: fixture('job.key'), ca: fixture('ca.pem') };
const SIZES = [
  { bytes: 8, iterations: 400 },
  { bytes: 2 ** 20, iterations: 30 },
  { bytes: 64 * 2 ** 20, iterations: 4 },
];

async function job(transport: 'tcp_host_staged' | 'tcp_peer', tls: TlsOptions | undefined): Promise<{ sessions: RankSession[]; coordinator: Coordinator }> {
  const secret = generateSecret();
  const uniqueId = UniqueId.random();
  const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize: 2, transport, secret, ...(tls ? { tls } : {}) }, {});
  const sessions = await Promise.all(
    [0, 1].map((rank) => openSession({ coordinator: `127.0.0.1:${coordinator.address.port}`, uniqueId, rank, worldSize: 2, transport, secret, ...(tls ? { tls } : {}) })),
  );
  return { sessions, coordinator };
}

async function medianMs(sessions: RankSession[], bytes: number, iterations: number): Promise<number> {
  const inputs = sessions.map(() => new Float32Array(bytes / 4).fill(1));
  const times: number[] = [];
  for (let index = 0; index < iterations + 2; index++) {
    const started = performance.now();
    await Promise.all(sessions.map((session, rank) => session.allReduce(inputs[rank]!)));
    if (index >= 2) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

console.log('| transport | size | plain (ms) | TLS (ms) | TLS / plain |');
console.log('|---|---:|---:|---:|---:|');
for (const transport of ['tcp_host_staged', 'tcp_peer'] as const) {
  const plain = await job(transport, undefined);
  const secure = await job(transport, TLS);
  for (const { bytes, iterations } of SIZES) {
    const a = await medianMs(plain.sessions, bytes, iterations);
    const b = await medianMs(secure.sessions, bytes, iterations);
    const size = bytes >= 2 ** 20 ? `${bytes / 2 ** 20} MiB` : `${bytes} B`;
    console.log(`| ${transport} | ${size} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(b / a).toFixed(2)}x |`);
  }
  for (const { sessions, coordinator } of [plain, secure]) {
    await Promise.all(sessions.map((session) => session.close()));
    await coordinator.done;
  }
}
