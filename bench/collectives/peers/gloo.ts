/**
 * Gloo, torch.distributed's CPU backend, measured by the peers' gloo_bench.py (bench/peers): on
 * this host, or one process per rank, each in its host's namespace, over eth0. It needs a python3
 * that can import torch (Debian: apt-get install python3-torch).
 */
import { spawnSync } from 'node:child_process';
import type { HostNamespaces } from '../hosts.js';
import { type Peer, type PeerBenchmark, PEER_OPS, peerSource } from './peer.js';

/** Debian's interpreter first: its python3-torch is what the peers' results were measured with. */
const PYTHONS = ['/usr/bin/python3', 'python3'];

export const GLOO: Peer = {
  name: 'Gloo',
  label: 'gloo',
  column: 'gloo',
  jsonKey: 'gloo',
  ops: PEER_OPS,
  prepare(hosts) {
    const script = peerSource('gloo_bench.py');
    if (typeof script !== 'string') return script.missing;
    const python = PYTHONS.find((candidate) => spawnSync(candidate, ['-c', 'import torch'], { stdio: 'ignore', timeout: 60_000 }).status === 0);
    if (python === undefined) return 'python3 cannot import torch (Debian: apt-get install python3-torch)';
    if (hosts) return glooAcrossHosts(python, script, hosts);
    return {
      description: `${python} ${script}`,
      command: (worldSize, ops, sizes) => ({
        file: python,
        args: [script, '--world', String(worldSize), '--ops', ops, '--sizes', sizes, '--tag', 'rxccl-bench'],
        env: { GLOO_SOCKET_IFNAME: 'lo' },
      }),
    };
  },
};

/**
 * gloo_bench.py's ranks, each started in its host's namespace by one shell (as the peers'
 * multihost/gloo_mh.sh does), rendezvous at rank 0's host: rank 0's rows are the benchmark's output.
 */
function glooAcrossHosts(python: string, script: string, hosts: HostNamespaces): PeerBenchmark {
  return {
    description: `${python} ${script}, one rank per process in its host's namespace`,
    command: (worldSize, ops, sizes) => {
      const port = 29_500 + Math.floor(Math.random() * 1_000);
      const master = hosts.address(hosts.hostOf(0, worldSize));
      const ranks = Array.from({ length: worldSize }, (_, rank) => {
        const { file, args } = hosts.inHost(hosts.hostOf(rank, worldSize), python, [
          script, '--world', String(worldSize), '--rank', String(rank), '--master', master, '--port', String(port), '--ops', ops, '--sizes', sizes, '--tag', 'rxccl-bench',
        ]);
        return `${[file, ...args].map((word) => `'${word}'`).join(' ')}${rank === 0 ? '' : ' > /dev/null'} &`;
      });
      return { file: 'bash', args: ['-c', [...ranks, 'rc=0; for job in $(jobs -p); do wait $job || rc=1; done; exit $rc'].join('\n')], env: { GLOO_SOCKET_IFNAME: 'eth0' } };
    },
  };
}
