/**
 * Issue #33 item 7: under torchrun, Slurm or Open MPI without GX1_UNIQUE_ID the unique id is
 * derived from the launcher's environment, so whoever reads or guesses it computes the id too.
 * Without a secret rank 0 warns once for the job (`RXCCL_NO_SECRET`, issue #49 item 1: one line
 * on stderr through the debug log, the other ranks silent), on loopback too, naming the launcher
 * and the remedy; a secret, or an id given explicitly, says nothing. One process says
 * `RXCCL_NO_SECRET` at most once, whichever cause comes first.
 */
import { type MockInstance, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { debugLog } from '../../lib/diagnostics/debug-log.js';
import { discoverJob } from '../../lib/launch/discover-job.js';
import type { Environment } from '../../lib/launch/job-environment.js';
import { generateSecret, resetNoSecretWarning, warnIfUnauthenticated } from '../../lib/transport/job-secret.js';

const ID = '00112233445566778899aabbccddeeff';

/** The env shapes of spec/launch/discover-job.spec.ts, every rank on loopback where the launcher allows. */
const torchrun = (rank: number): Environment => ({
  RANK: String(rank),
  WORLD_SIZE: '2',
  LOCAL_RANK: String(rank),
  LOCAL_WORLD_SIZE: '2',
  MASTER_ADDR: '127.0.0.1',
  MASTER_PORT: '29500',
  TORCHELASTIC_RUN_ID: 'run-42',
  TORCHELASTIC_RESTART_COUNT: '0',
});
const srun = (rank: number): Environment => ({
  SLURM_PROCID: String(rank),
  SLURM_NTASKS: '2',
  SLURM_LOCALID: String(rank),
  SLURM_JOB_NODELIST: 'node[01-02]',
  SLURM_JOB_ID: '812',
  SLURM_STEP_ID: '0',
});
const mpirun = (rank: number): Environment => ({
  OMPI_COMM_WORLD_RANK: String(rank),
  OMPI_COMM_WORLD_SIZE: '2',
  OMPI_COMM_WORLD_LOCAL_RANK: String(rank),
  OMPI_COMM_WORLD_LOCAL_SIZE: '2',
  PMIX_NAMESPACE: '1364721665',
  OMPI_MCA_orte_hnp_uri: '1364721664.0;tcp://192.0.2.2:44841',
});

/** Kubernetes derives the id as well (from the world size and coordinator address alone). */
const pod = (index: number): Environment => ({ JOB_COMPLETION_INDEX: String(index), GX1_WORLD_SIZE: '2', GX1_COORDINATOR_HOST: 'train-0.train' });

const LAUNCHERS = [
  ['torchrun', torchrun],
  ['Slurm', srun],
  ['Open MPI', mpirun],
  ['Kubernetes', pod],
] as const;

let warn: MockInstance<(message: string) => void>;
beforeEach(() => {
  resetNoSecretWarning();
  warn = vi.spyOn(debugLog, 'warn').mockImplementation(() => undefined);
});
afterEach(() => {
  vi.restoreAllMocks();
  resetNoSecretWarning();
});

/** The warnings' texts, after the code each starts with. */
function warnings(): string[] {
  return warn.mock.calls.map(([line]) => {
    expect(line).toMatch(/^\[RXCCL_NO_SECRET\] /);
    return line.slice('[RXCCL_NO_SECRET] '.length);
  });
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('a unique id derived from the launcher without a secret', () => {
  it.each(LAUNCHERS)('warns once under %s, on rank 0 only, naming it and the remedy, also on loopback', (name, env) => {
    const other = discoverJob(env(1));
    expect(warn).not.toHaveBeenCalled();
    const jobs = [discoverJob(env(0)), discoverJob(env(0))];
    expect(other.uniqueId).toBe(jobs[0]!.uniqueId);
    expect(warnings()).toHaveLength(1);
    const message = warnings()[0]!;
    expect(message).not.toContain('\n');
    expect(message).toMatch(new RegExp(`^rxccl derived this job's unique id from ${escape(name)}'s environment and no job secret is set: `));
    expect(message).toContain('anyone who can read or guess those variables computes the same id and can join the job');
    expect(message).toContain('on loopback too');
    expect(message).toMatch(/Set GX1_SECRET to the same secret on every rank \(at least 16 bytes, e\.g\. the output of `openssl rand -hex 32`\), or GX1_SECRET_FILE to a file holding it\.$/);
  });

  it('runs on loopback in these shapes: the warning does not depend on the address', () => {
    expect(discoverJob(torchrun(0)).hostCoordinator).toEqual({ bind: '127.0.0.1' });
    expect(discoverJob(mpirun(0)).hostCoordinator).toEqual({ bind: '127.0.0.1' });
    expect(warnings()).toHaveLength(1);
  });

  it('is the one RXCCL_NO_SECRET warning of the process, whichever cause comes first', () => {
    discoverJob(torchrun(0));
    discoverJob(srun(0));
    warnIfUnauthenticated('0.0.0.0', null, 'coordinator');
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(/from torchrun's environment/);

    resetNoSecretWarning();
    warnIfUnauthenticated('0.0.0.0', null, 'coordinator');
    discoverJob(mpirun(0));
    expect(warnings()).toHaveLength(2);
    expect(warnings()[1]).toMatch(/^rxccl coordinator listens on 0\.0\.0\.0 without a job secret/);
  });
});

describe('no warning', () => {
  it.each(LAUNCHERS)('under %s with GX1_SECRET or GX1_SECRET_FILE', (_name, env) => {
    discoverJob({ ...env(0), GX1_SECRET: generateSecret() });
    // The file is not read here (the session reads it later): naming one is enough.
    discoverJob({ ...env(1), GX1_SECRET_FILE: '/run/secrets/rxccl' });
    expect(warn).not.toHaveBeenCalled();
  });

  it.each(LAUNCHERS)('under %s with GX1_UNIQUE_ID given explicitly (today: only a listener off loopback warns)', (_name, env) => {
    expect(discoverJob({ ...env(0), GX1_UNIQUE_ID: ID }).uniqueId).toBe(ID);
    // A coordinator started separately (GX1_COORDINATOR needs GX1_UNIQUE_ID, and no GX1_COORDINATOR_HOST).
    const { GX1_COORDINATOR_HOST: _, ...separate } = env(1);
    expect(discoverJob({ ...separate, GX1_COORDINATOR: 'head:29400', GX1_UNIQUE_ID: ID }).hostCoordinator).toBeNull();
    expect(warn).not.toHaveBeenCalled();
  });

  it('under rxccl launch, whose variables carry the id (and always a secret)', () => {
    discoverJob({ GX1_COORDINATOR: '127.0.0.1:4567', GX1_UNIQUE_ID: ID, GX1_RANK: '1', GX1_WORLD_SIZE: '2' });
    expect(warn).not.toHaveBeenCalled();
  });

  it('when the variables are wrong: the error says what to fix first', () => {
    expect(() => discoverJob({ ...torchrun(0), MASTER_PORT: '' })).toThrow(/missing MASTER_PORT/);
    expect(warn).not.toHaveBeenCalled();
  });
});
