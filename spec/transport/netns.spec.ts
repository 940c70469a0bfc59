/**
 * A real two-host tcp_peer job: each rank in its own network namespace, the hosts joined by one
 * veth pair per rail plus one for the control plane, each rail with its own listen and advertise
 * address; the job's collectives run on the native data plane. Needs root and `ip netns`; skipped
 * with the reason printed otherwise. The addresses
 * (198.18.0.0/15, the benchmarking range) exist only inside the namespaces this test creates.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { UniqueId } from '../../lib/protocol/unique-id.js';

const tag = `rx${process.pid}`;
const hosts = [`${tag}a`, `${tag}b`];
// [link name, host A address, host B address]
const links: [string, string, string][] = [
  ['c', '198.18.3.1', '198.18.3.2'],
  ['r0', '198.18.1.1', '198.18.1.2'],
  ['r1', '198.18.2.1', '198.18.2.2'],
];

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: 'pipe' });
}

function buildNetwork(): string | null {
  try {
    for (const host of hosts) ip('netns', 'add', host);
    for (const host of hosts) ip('-n', host, 'link', 'set', 'lo', 'up');
    for (const [name, a, b] of links) {
      ip('link', 'add', `${tag}${name}a`, 'netns', hosts[0]!, 'type', 'veth', 'peer', 'name', `${tag}${name}b`, 'netns', hosts[1]!);
      ip('-n', hosts[0]!, 'addr', 'add', `${a}/24`, 'dev', `${tag}${name}a`);
      ip('-n', hosts[1]!, 'addr', 'add', `${b}/24`, 'dev', `${tag}${name}b`);
      ip('-n', hosts[0]!, 'link', 'set', `${tag}${name}a`, 'up');
      ip('-n', hosts[1]!, 'link', 'set', `${tag}${name}b`, 'up');
    }
    return null;
  } catch (error) {
    return `cannot build network namespaces (${(error as Error).message.split('\n')[0]}); needs root and iproute2`;
  }
}

const skipReason = process.platform !== 'linux' ? 'network namespaces need Linux' : buildNetwork();
if (skipReason !== null) console.log(`skipping the network-namespace test: ${skipReason}`);

afterAll(() => {
  for (const host of hosts) {
    try {
      ip('netns', 'del', host);
    } catch {
      // Never created.
    }
  }
});

const script = fileURLToPath(new URL('../helpers/netns-node.ts', import.meta.url));

function inHost(host: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn('ip', ['netns', 'exec', host, process.execPath, '--import', 'tsx', script, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, stdout, stderr }));
  return { child, exited, output: () => stdout };
}

describe.skipIf(skipReason !== null)('tcp_peer across network namespaces', () => {
  it('exchanges data on every rail, each over its own network, and all-reduces on the native data plane', async () => {
    const uniqueId = UniqueId.random().toHex();
    const coordinator = inHost(hosts[0]!, ['coordinator', '198.18.3.1', '2', '2', uniqueId]);
    const children = [coordinator.child];
    try {
      while (!coordinator.output().includes('\n')) await once(coordinator.child.stdout!, 'data');
      const { port } = JSON.parse(coordinator.output().split('\n')[0]!) as { port: number };
      const rankEnv = (rank: number) => ({
        GX1_COORDINATOR: `198.18.3.1:${port}`,
        GX1_UNIQUE_ID: uniqueId,
        GX1_RANK: String(rank),
        GX1_WORLD_SIZE: '2',
        GX1_P2P_RAILS: '2',
        GX1_COLLECTIVE_TRANSPORT: 'tcp_peer',
        GX1_TIMEOUT_MS: '10000',
        GX1_P2P_RAIL_LISTEN_ADDRS: `${links[1]![rank + 1]}:0,${links[2]![rank + 1]}:0`,
        GX1_P2P_RAIL_ADVERTISE_ADDRS: `${links[1]![rank + 1]},${links[2]![rank + 1]}`,
      });
      const ranks = [0, 1].map((rank) => inHost(hosts[rank]!, ['rank'], rankEnv(rank)));
      children.push(...ranks.map((rank) => rank.child));
      const results = await Promise.all(ranks.map((rank) => rank.exited));
      for (const result of results) expect(result.code, result.stderr).toBe(0);
      const seen = results.map(
        (result) => JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { rank: number; received: number[][]; localAddresses: string[]; sums: number[]; collectives: string[] },
      );
      for (const { rank, received, localAddresses, sums, collectives } of seen) {
        const peer = 1 - rank;
        expect(received).toEqual([[peer, 0], [peer, 1]]);
        expect(localAddresses).toEqual([links[1]![rank + 1], links[2]![rank + 1]]);
        // Across hosts too the job runs the native data plane: all-pairs when small, then pairwise (at 2 ranks at any size).
        expect(sums).toEqual([3, 3, 3]);
        expect(collectives).toEqual(['allReduce all-pairs on native', 'allReduce pairwise on native', 'allReduce pairwise on native', 'barrier pairwise on native']);
      }
      expect((await coordinator.exited).code).toBe(0);
    } finally {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 60_000);
});
