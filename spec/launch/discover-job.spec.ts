/** Each launcher's variables, as pure functions over an environment object. */
import { describe, expect, it } from 'vitest';
import { discoverJob, hasJobVariables } from '../../lib/launch/discover-job.js';
import { DERIVED_PORT_BASE, DERIVED_PORT_SPAN } from '../../lib/launch/job-identity.js';
import type { Environment } from '../../lib/launch/job-environment.js';

const ID = '00112233445566778899aabbccddeeff';

/** The same job seen from every rank: `rankEnv(r)` is rank r's environment. */
function everyRank(size: number, rankEnv: (rank: number) => Environment) {
  return Array.from({ length: size }, (_, rank) => discoverJob(rankEnv(rank)));
}

function expectOneJob(jobs: ReturnType<typeof everyRank>) {
  expect(jobs.map((job) => job.rank)).toEqual(jobs.map((_, rank) => rank));
  for (const job of jobs) {
    expect(job.uniqueId).toBe(jobs[0]!.uniqueId);
    expect(job.coordinator).toEqual(jobs[0]!.coordinator);
    expect(job.hostCoordinator).toEqual(jobs[0]!.hostCoordinator);
  }
  expect(jobs[0]!.uniqueId).toMatch(/^[0-9a-f]{32}$/);
}

describe('discoverJob: rxccl launch (GX1_*)', () => {
  const launched = (rank: number): Environment => ({
    GX1_COORDINATOR: '127.0.0.1:4567',
    GX1_UNIQUE_ID: ID,
    GX1_RANK: String(rank),
    GX1_WORLD_SIZE: '2',
    GX1_LOCAL_RANK: String(rank),
    GX1_LOCAL_WORLD_SIZE: '2',
    GX1_P2P_RAILS: '3',
    GX1_COLLECTIVE_TRANSPORT: 'tcp_host_staged',
  });

  it('reads the variables the launcher sets; the coordinator runs already', () => {
    expect(discoverJob(launched(1))).toEqual({
      launcher: 'rxccl',
      rank: 1,
      worldSize: 2,
      localRank: 1,
      localWorldSize: 2,
      coordinator: { host: '127.0.0.1', port: 4567 },
      uniqueId: ID,
      hostCoordinator: null,
      rails: 3,
      transport: 'tcp_host_staged',
      timeoutMs: undefined,
      collectiveTimeoutMs: undefined,
      heartbeatTimeoutMs: undefined,
    });
  });

  it('comes first: GX1_RANK wins over the variables of an enclosing launcher', () => {
    const job = discoverJob({ ...launched(0), RANK: '5', WORLD_SIZE: '8', MASTER_ADDR: 'h', MASTER_PORT: '1', SLURM_PROCID: '3', SLURM_NTASKS: '4' });
    expect(job).toMatchObject({ launcher: 'rxccl', rank: 0, worldSize: 2 });
  });

  it('reads the optional timeouts', () => {
    const job = discoverJob({ ...launched(0), GX1_TIMEOUT_MS: '2000', GX1_COLLECTIVE_TIMEOUT_MS: '3000', GX1_HEARTBEAT_TIMEOUT_MS: '400' });
    expect(job).toMatchObject({ timeoutMs: 2000, collectiveTimeoutMs: 3000, heartbeatTimeoutMs: 400 });
  });

  it('names what is missing and what was found', () => {
    expect(() => discoverJob({ GX1_RANK: '0', GX1_WORLD_SIZE: '2' })).toThrow(
      'cannot open a session from the environment (rxccl): the rxccl variables are incomplete: missing GX1_COORDINATOR, GX1_UNIQUE_ID; found GX1_RANK=0, GX1_WORLD_SIZE=2',
    );
  });

  it('takes the coordinator line without GX1_RANK as incomplete rxccl variables', () => {
    expect(() => discoverJob({ GX1_COORDINATOR: 'h:1', GX1_UNIQUE_ID: ID, GX1_WORLD_SIZE: '2' })).toThrow(/missing GX1_RANK; found GX1_COORDINATOR=h:1, GX1_UNIQUE_ID=/);
  });

  it.each([
    [{ GX1_RANK: '2' }, /rank 2 is outside world size 2/],
    [{ GX1_RANK: '-1' }, /GX1_RANK must be a non-negative integer, got "-1"/],
    [{ GX1_WORLD_SIZE: 'four' }, /GX1_WORLD_SIZE must be a non-negative integer, got "four"/],
    [{ GX1_UNIQUE_ID: 'abc' }, /GX1_UNIQUE_ID must be 32 hex digits, got "abc"/],
    [{ GX1_COORDINATOR: 'localhost' }, /GX1_COORDINATOR must be host:port/],
    [{ GX1_P2P_RAILS: '0' }, /point-to-point rail count 0 is outside 1..=64/],
    [{ GX1_COLLECTIVE_TRANSPORT: 'udp' }, /GX1_COLLECTIVE_TRANSPORT must be tcp_host_staged or tcp_peer, got "udp"/],
    [{ GX1_TIMEOUT_MS: '0' }, /GX1_TIMEOUT_MS must be greater than zero/],
  ])('rejects %j', (change, message) => {
    expect(() => discoverJob({ ...launched(0), ...change })).toThrow(message);
  });

  it('says where to start when no launcher is present', () => {
    expect(() => discoverJob({ PATH: '/usr/bin', HOME: '/root' })).toThrow(
      /^cannot open a session from the environment: no launcher variables found \(looked for GX1_RANK \[rxccl launch\]; .*torchrun.*mpirun.*srun.*Kubernetes.*\); start the ranks with `rxccl launch -n N -- COMMAND`/,
    );
  });
});

describe("discoverJob and hasJobVariables: the environment's settings", () => {
  /** `env`, counting the reads of one settings table variable (GX1_SPIN_US: no launcher asks for it, the table reads it once a reading). */
  const counted = (env: Environment) => {
    const reads = { count: 0 };
    const proxy = new Proxy(env, { get: (target, name) => ((reads.count += name === 'GX1_SPIN_US' ? 1 : 0), Reflect.get(target, name)) });
    return { proxy, reads };
  };

  it('are read once per call, however many launchers are asked about the environment', () => {
    const none = counted({ PATH: '/bin' });
    expect(() => discoverJob(none.proxy)).toThrow(/no launcher variables found/);
    expect(hasJobVariables(none.proxy)).toBe(false);
    expect(none.reads.count).toBe(2);
    const slurm = counted({ SLURM_PROCID: '0', SLURM_NTASKS: '1', SLURM_JOB_NODELIST: 'node01', SLURM_JOB_ID: '7', SLURM_STEP_ID: '0', GX1_SPIN_US: '5' });
    expect(discoverJob(slurm.proxy)).toMatchObject({ launcher: 'slurm', rank: 0, worldSize: 1 });
    expect(slurm.reads.count).toBe(1);
  });
});

describe('discoverJob: torchrun', () => {
  const torchrun = (rank: number, extra: Environment = {}): Environment => ({
    RANK: String(rank),
    WORLD_SIZE: '4',
    LOCAL_RANK: String(rank % 2),
    LOCAL_WORLD_SIZE: '2',
    MASTER_ADDR: 'node07',
    MASTER_PORT: '29500',
    TORCHELASTIC_RUN_ID: 'run-42',
    TORCHELASTIC_RESTART_COUNT: '0',
    ...extra,
  });

  it('puts the coordinator on MASTER_ADDR, one port above MASTER_PORT, hosted by rank 0', () => {
    const jobs = everyRank(4, (rank) => torchrun(rank));
    expectOneJob(jobs);
    expect(jobs[3]).toMatchObject({
      launcher: 'torchrun',
      worldSize: 4,
      localRank: 1,
      localWorldSize: 2,
      coordinator: { host: 'node07', port: 29501 },
      hostCoordinator: { bind: '0.0.0.0' },
    });
  });

  it('binds a loopback MASTER_ADDR only on loopback', () => {
    expect(discoverJob(torchrun(0, { MASTER_ADDR: '127.0.0.1' })).hostCoordinator).toEqual({ bind: '127.0.0.1' });
    expect(discoverJob(torchrun(0, { MASTER_ADDR: 'localhost' })).hostCoordinator).toEqual({ bind: 'localhost' });
  });

  it('derives a new unique id for a new run and for a restart', () => {
    const first = discoverJob(torchrun(0)).uniqueId;
    expect(discoverJob(torchrun(0, { TORCHELASTIC_RUN_ID: 'run-43' })).uniqueId).not.toBe(first);
    expect(discoverJob(torchrun(0, { TORCHELASTIC_RESTART_COUNT: '1' })).uniqueId).not.toBe(first);
    expect(discoverJob(torchrun(0, { GX1_UNIQUE_ID: ID.toUpperCase() })).uniqueId).toBe(ID);
  });

  it('takes GX1_COORDINATOR_HOST and GX1_COORDINATOR_PORT over its defaults', () => {
    const job = discoverJob(torchrun(2, { GX1_COORDINATOR_HOST: '10.0.0.5', GX1_COORDINATOR_PORT: '31000' }));
    expect(job).toMatchObject({ coordinator: { host: '10.0.0.5', port: 31000 }, hostCoordinator: { bind: '0.0.0.0' } });
  });

  it('is recognised by RANK and WORLD_SIZE alone, and then names what is missing', () => {
    expect(() => discoverJob({ RANK: '1', WORLD_SIZE: '2', LOCAL_RANK: '1' })).toThrow(
      'cannot open a session from the environment (torchrun): the torchrun variables are incomplete: missing MASTER_ADDR, MASTER_PORT; found RANK=1, WORLD_SIZE=2, LOCAL_RANK=1',
    );
  });

  it.each([
    [{ RANK: '4' }, /rank 4 is outside world size 4 \(RANK=4, WORLD_SIZE=4/],
    [{ GX1_WORLD_SIZE: '3' }, /GX1_WORLD_SIZE=3 contradicts the launcher's world size 4/],
    [{ MASTER_PORT: '65535' }, /MASTER_PORT must be in 1..65534 \(rxccl uses the port above it\), got 65535/],
    [{ GX1_COORDINATOR_PORT: '70000' }, /GX1_COORDINATOR_PORT must be in 1..65535, got 70000/],
    [{ WORLD_SIZE: '0' }, /world size must be at least 1/],
  ])('rejects a contradiction: %j', (change, message) => {
    expect(() => discoverJob(torchrun(0, change))).toThrow(message);
  });
});

describe('discoverJob: Open MPI', () => {
  const mpirun = (rank: number, size: number, localSize: number, extra: Environment = {}): Environment => ({
    OMPI_COMM_WORLD_RANK: String(rank),
    OMPI_COMM_WORLD_SIZE: String(size),
    OMPI_COMM_WORLD_LOCAL_RANK: String(rank % localSize),
    OMPI_COMM_WORLD_LOCAL_SIZE: String(localSize),
    PMIX_NAMESPACE: '1364721665',
    OMPI_MCA_orte_hnp_uri: '1364721664.0;tcp://192.0.2.2:44841',
    ...extra,
  });

  it('puts the coordinator on 127.0.0.1 when every rank is local, on a port derived from the job', () => {
    const jobs = everyRank(3, (rank) => mpirun(rank, 3, 3));
    expectOneJob(jobs);
    const { port } = jobs[0]!.coordinator;
    expect(jobs[0]).toMatchObject({ launcher: 'open-mpi', worldSize: 3, localRank: 0, localWorldSize: 3, coordinator: { host: '127.0.0.1' }, hostCoordinator: { bind: '127.0.0.1' } });
    expect(port).toBeGreaterThanOrEqual(DERIVED_PORT_BASE);
    expect(port).toBeLessThan(DERIVED_PORT_BASE + DERIVED_PORT_SPAN);
    // Another mpirun on the same host gets its own port and id.
    const other = discoverJob(mpirun(0, 3, 3, { PMIX_NAMESPACE: '1364721999', OMPI_MCA_orte_hnp_uri: '1364721998.0;tcp://192.0.2.2:45001' }));
    expect(other.coordinator.port).not.toBe(port);
    expect(other.uniqueId).not.toBe(jobs[0]!.uniqueId);
  });

  it('needs GX1_COORDINATOR_HOST when the ranks span hosts', () => {
    expect(() => discoverJob(mpirun(1, 4, 2))).toThrow(
      /missing GX1_COORDINATOR_HOST \(the host of rank 0, which hosts the coordinator\) or GX1_COORDINATOR \(a coordinator started separately\); found OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=4, OMPI_COMM_WORLD_LOCAL_RANK=1, OMPI_COMM_WORLD_LOCAL_SIZE=2/,
    );
    const jobs = everyRank(4, (rank) => mpirun(rank, 4, 2, { GX1_COORDINATOR_HOST: 'hostA' }));
    expectOneJob(jobs);
    expect(jobs[0]).toMatchObject({ coordinator: { host: 'hostA' }, hostCoordinator: { bind: '0.0.0.0' } });
  });

  it('wins over the Slurm variables of the allocation mpirun runs in', () => {
    const job = discoverJob(mpirun(1, 2, 2, { SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_NODELIST: 'n1' }));
    expect(job).toMatchObject({ launcher: 'open-mpi', rank: 1 });
  });
});

describe('discoverJob: Slurm', () => {
  const srun = (rank: number, extra: Environment = {}): Environment => ({
    SLURM_PROCID: String(rank),
    SLURM_NTASKS: '4',
    SLURM_LOCALID: String(rank % 2),
    SLURM_JOB_NODELIST: 'node[01-03,07]',
    SLURM_JOB_ID: '812',
    SLURM_STEP_ID: '0',
    ...extra,
  });

  it('puts the coordinator on the first host of the node list, on a port derived from the job', () => {
    const jobs = everyRank(4, (rank) => srun(rank));
    expectOneJob(jobs);
    expect(jobs[1]).toMatchObject({ launcher: 'slurm', worldSize: 4, localRank: 1, localWorldSize: null, coordinator: { host: 'node01' }, hostCoordinator: { bind: '0.0.0.0' } });
    expect(discoverJob(srun(0, { SLURM_STEP_ID: '1' })).uniqueId).not.toBe(jobs[0]!.uniqueId);
  });

  it("prefers the step's node list, and SLURM_NPROCS stands in for SLURM_NTASKS", () => {
    const { SLURM_NTASKS: _, ...noTasks } = srun(0, { SLURM_STEP_NODELIST: 'gpu[5-6]', SLURM_NPROCS: '4' });
    expect(discoverJob(noTasks)).toMatchObject({ worldSize: 4, coordinator: { host: 'gpu5' } });
  });

  it('connects to a coordinator started separately: GX1_COORDINATOR with its GX1_UNIQUE_ID', () => {
    const job = discoverJob(srun(0, { GX1_COORDINATOR: 'login1:29400', GX1_UNIQUE_ID: ID, GX1_WORLD_SIZE: '4' }));
    expect(job).toMatchObject({ coordinator: { host: 'login1', port: 29400 }, uniqueId: ID, hostCoordinator: null });
  });

  it.each([
    [{ GX1_COORDINATOR: 'login1:29400' }, /GX1_COORDINATOR=login1:29400 names a coordinator started separately, but GX1_UNIQUE_ID is missing/],
    [{ GX1_COORDINATOR: 'login1:29400', GX1_UNIQUE_ID: ID, GX1_COORDINATOR_HOST: 'node01' }, /GX1_COORDINATOR \(a coordinator started separately\) contradicts GX1_COORDINATOR_HOST/],
    [{ SLURM_JOB_NODELIST: 'node[01-' }, /SLURM_JOB_NODELIST "node\[01-" is not a Slurm host list/],
    [{ SLURM_NTASKS: '' }, /the slurm variables are incomplete: missing SLURM_NTASKS; found SLURM_PROCID=0/],
  ])('rejects %j', (change, message) => {
    expect(() => discoverJob(srun(0, change))).toThrow(message);
  });

  it('needs GX1_COORDINATOR_HOST without a node list', () => {
    expect(() => discoverJob({ SLURM_PROCID: '0', SLURM_NTASKS: '2' })).toThrow(/\(slurm\): missing GX1_COORDINATOR_HOST/);
    expect(discoverJob({ SLURM_PROCID: '0', SLURM_NTASKS: '2', GX1_COORDINATOR_HOST: 'head' }).coordinator.host).toBe('head');
  });
});

describe('discoverJob: Kubernetes indexed Job', () => {
  const pod = (index: number, extra: Environment = {}): Environment => ({
    JOB_COMPLETION_INDEX: String(index),
    GX1_WORLD_SIZE: '3',
    GX1_COORDINATOR_HOST: 'train-0.train',
    GX1_COORDINATOR_PORT: '29400',
    ...extra,
  });

  it('takes the completion index as the rank; pod 0 hosts the coordinator', () => {
    const jobs = everyRank(3, (index) => pod(index));
    expectOneJob(jobs);
    expect(jobs[2]).toMatchObject({ launcher: 'kubernetes', rank: 2, worldSize: 3, coordinator: { host: 'train-0.train', port: 29400 }, hostCoordinator: { bind: '0.0.0.0' } });
  });

  it('names the variables the manifest must add', () => {
    expect(() => discoverJob({ JOB_COMPLETION_INDEX: '1' })).toThrow(
      'cannot open a session from the environment (kubernetes): the kubernetes variables are incomplete: missing GX1_WORLD_SIZE; found JOB_COMPLETION_INDEX=1',
    );
    expect(() => discoverJob({ JOB_COMPLETION_INDEX: '1', GX1_WORLD_SIZE: '2' })).toThrow(/\(kubernetes\): missing GX1_COORDINATOR_HOST/);
  });
});
