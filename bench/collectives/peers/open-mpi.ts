/**
 * Open MPI over TCP on loopback (pml ob1, btl tcp,self), measured by the peers' mpi_bench.c:
 * built with mpicc into node_modules/.cache/rxccl/peers (again when the source is newer) and
 * started with mpirun exactly as the peers' run_all.sh starts it. It needs mpicc and mpirun
 * (Debian: apt-get install openmpi-bin libopenmpi-dev).
 */
import { spawnSync } from 'node:child_process';
import { buildPeerBenchmark, type Peer, PEER_OPS, peerSource } from './peer.js';

/** mpirun's flags for TCP over loopback only (run_all.sh's MPIRUN and MPI_TCP). */
const TCP_ON_LOOPBACK = ['--oversubscribe', '--mca', 'oob_tcp_if_include', 'lo', '--mca', 'pml', 'ob1', '--mca', 'btl', 'tcp,self', '--mca', 'btl_tcp_if_include', 'lo'];

/** Debian's openmpi-bin brings mpicc without Open MPI's headers, which libopenmpi-dev holds. */
export function explainMpicc(stderr: string): string | null {
  return /mpi\.h: No such file/.test(stderr) ? 'mpicc finds no mpi.h (Debian: apt-get install libopenmpi-dev)' : null;
}

/** mpirun's flags for TCP between the hosts' namespaces (as the peers' multihost/mpi_mh.sh sets them). */
const TCP_ACROSS_HOSTS = (subnet: string) => ['--oversubscribe', '--mca', 'pml', 'ob1', '--mca', 'btl', 'tcp,self', '--mca', 'btl_tcp_if_include', subnet];

export const OPEN_MPI_TCP: Peer = {
  name: 'Open MPI over TCP',
  label: 'mpi-tcp',
  column: 'mpi',
  jsonKey: 'mpiTcp',
  ops: PEER_OPS,
  prepare(hosts) {
    const source = peerSource('mpi_bench.c');
    if (typeof source !== 'string') return source.missing;
    const missing = ['mpicc', 'mpirun'].filter((tool) => spawnSync(tool, ['--version'], { stdio: 'ignore', timeout: 60_000 }).error !== undefined);
    if (missing.length > 0) return `no ${missing.join(' nor ')} on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev)`;
    const binary = buildPeerBenchmark('mpi_bench', source, (output) => ({ file: 'mpicc', args: ['-O2', '-o', output, source] }), explainMpicc);
    if (typeof binary !== 'string') return binary.failure;
    // mpirun refuses to start ranks as root unless told to.
    const asRoot = process.getuid?.() === 0 ? ['--allow-run-as-root'] : [];
    if (hosts) {
      return {
        description: `mpirun ${binary}, each rank in its host's namespace`,
        command: (worldSize, ops, sizes) => ({
          file: 'mpirun',
          // Each rank execs itself into its host's namespace; its PMIx client reaches mpirun over the bridge.
          args: [...asRoot, ...TCP_ACROSS_HOSTS(hosts.subnet), '-np', String(worldSize), 'bash', '-c', `exec ip netns exec ${hosts.rankNamespace('OMPI_COMM_WORLD_RANK', worldSize)} "$0" "$@"`, binary, 'mpi-tcp', 'rxccl-bench', '', ops, sizes],
          env: { PMIX_MCA_ptl_tcp_if_include: hosts.bridge, PMIX_MCA_ptl_tcp_remote_connections: '1' },
        }),
      };
    }
    return {
      description: `mpirun ${binary}`,
      command: (worldSize, ops, sizes) => ({
        file: 'mpirun',
        args: [...asRoot, ...TCP_ON_LOOPBACK, '-np', String(worldSize), binary, 'mpi-tcp', 'rxccl-bench', '', ops, sizes],
      }),
    };
  },
};
