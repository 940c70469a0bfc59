/**
 * Gloo's reduce-scatter, from the Gloo C++ library itself (gloo::ReduceScatterHalvingDoubling):
 * torch.distributed's Gloo backend has none ("ProcessGroupGloo does not support reduce_scatter"),
 * so gloo_bench.py leaves our reducescatter rows without a Gloo ratio. Its benchmark,
 * bench/peers/gloo_reduce_scatter.cc, follows gloo_bench.py's method and prints its rows,
 * so its times land in the same Gloo column. Built with g++ into node_modules/.cache/rxccl/peers
 * (again when the source is newer); it needs g++ and libgloo-dev (Debian: apt-get install g++
 * libgloo-dev).
 */
import { spawnSync } from 'node:child_process';
import { GLOO } from './gloo.js';
import { buildPeerBenchmark, type Peer, peerSource } from './peer.js';

const INSTALL_GLOO = '(Debian: apt-get install libgloo-dev)';

export const GLOO_REDUCE_SCATTER: Peer = {
  name: 'Gloo (C++ library, reduce-scatter)',
  // The Gloo column: a reducescatter row reads "x gloo" like the rows gloo_bench.py measures.
  label: GLOO.label,
  column: GLOO.column,
  jsonKey: GLOO.jsonKey,
  ops: ['reducescatter'],
  prepare(hosts) {
    if (hosts) return 'not measured across hosts (its benchmark starts every rank itself, on loopback)';
    const source = peerSource('gloo_reduce_scatter.cc');
    if (typeof source !== 'string') return source.missing;
    if (spawnSync('g++', ['--version'], { stdio: 'ignore', timeout: 60_000 }).error !== undefined) return 'no g++ on PATH (Debian: apt-get install g++)';
    // -O3 as Gloo's own release build: the sum it runs is a template instantiated here.
    const binary = buildPeerBenchmark('gloo_reduce_scatter', source, (output) => ({ file: 'g++', args: ['-O3', '-std=c++17', '-o', output, source, '-lgloo', '-pthread'] }), missingGloo);
    if (typeof binary !== 'string') return binary.failure;
    return {
      description: binary,
      command: (worldSize, ops, sizes) => ({ file: binary, args: ['--world', String(worldSize), '--ops', ops, '--sizes', sizes, '--tag', 'rxccl-bench'] }),
    };
  },
};

/** Why the compiler failed, where that is a missing part of Gloo. */
function missingGloo(stderr: string): string | null {
  const header = /(gloo\/\S+\.h): No such file/.exec(stderr);
  if (header !== null) return `no ${header[1]} ${INSTALL_GLOO}`;
  return /cannot find -lgloo/.test(stderr) ? `no libgloo.so to link ${INSTALL_GLOO}` : null;
}
