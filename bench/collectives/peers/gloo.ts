/**
 * Gloo, torch.distributed's CPU backend, measured by the peers' gloo_bench.py. It needs a python3
 * that can import torch (Debian: apt-get install python3-torch).
 */
import { spawnSync } from 'node:child_process';
import { type Peer, PEER_OPS, peerSource } from './peer.js';

/** Debian's interpreter first: its python3-torch is what the peers' results were measured with. */
const PYTHONS = ['/usr/bin/python3', 'python3'];

export const GLOO: Peer = {
  name: 'Gloo',
  label: 'gloo',
  column: 'gloo',
  jsonKey: 'gloo',
  ops: PEER_OPS,
  prepare() {
    const script = peerSource('gloo_bench.py');
    if (typeof script !== 'string') return script.missing;
    const python = PYTHONS.find((candidate) => spawnSync(candidate, ['-c', 'import torch'], { stdio: 'ignore', timeout: 60_000 }).status === 0);
    if (python === undefined) return 'python3 cannot import torch (Debian: apt-get install python3-torch)';
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
