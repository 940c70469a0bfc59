/**
 * The command line's surface: help, and one-line errors with exit status 2. Most cases run the
 * CLI in this process (a new process per case costs a second); two go through bin/rxccl.mjs.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { runCli } from '../../lib/cli/main.js';
import { ROOT, runRxccl } from './rxccl-process.js';

/** Runs the CLI in-process, capturing what it writes. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = { stdout: '', stderr: '' };
  const capture = (stream: 'stdout' | 'stderr') =>
    vi.spyOn(process[stream], 'write').mockImplementation(((chunk: string | Uint8Array) => {
      output[stream] += String(chunk);
      return true;
    }) as typeof process.stdout.write);
  const spies = [capture('stdout'), capture('stderr')];
  try {
    return { code: await runCli(args), ...output };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

describe('rxccl command line', () => {
  it.each(['launch', 'coordinator', 'bench', 'tune', 'probe', 'doctor'])('rxccl %s --help describes the command and exits 0', async (command) => {
    const result = await cli([command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^usage: rxccl ${command} `));
    expect(result.stdout).toContain('-h, --help');
  });

  it.each([['--help'], ['-h'], ['help']])('rxccl %s lists the commands', async (flag) => {
    const result = await cli([flag]);
    expect(result.code).toBe(0);
    for (const command of ['launch', 'coordinator', 'bench', 'tune', 'probe', 'doctor']) expect(result.stdout).toContain(`  ${command} `);
  });

  it('rxccl help COMMAND prints what rxccl COMMAND --help does', async () => {
    const help = await cli(['help', 'coordinator']);
    const flag = await cli(['coordinator', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: rxccl coordinator --world-size N/);
    expect(help.stdout).toBe(flag.stdout);
  });

  it('rxccl --version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const result = await cli(['--version']);
    expect(result).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it.each([
    [['launch', '-n', '2', '--bogus', '--', 'true'], 'rxccl launch: unknown option --bogus (see rxccl launch --help)'],
    [['launch', '-x', '--', 'true'], 'rxccl launch: unknown option -x (see rxccl launch --help)'],
    [['launch', '-n', 'two', '--', 'true'], 'rxccl launch: --ranks must be an integer >= 1, got "two"'],
    [['launch', '-n', '0', '--', 'true'], 'rxccl launch: --ranks must be an integer >= 1, got "0"'],
    [['launch', '--', 'true'], 'rxccl launch: missing -n/--ranks (see rxccl launch --help)'],
    [['launch', '-n', '2'], 'rxccl launch: missing the COMMAND to run (rxccl launch -n N -- COMMAND [ARGS...])'],
    [['launch', '-n', '2', '--rails'], 'rxccl launch: --rails needs a value (R)'],
    [['launch', '-n', '2', '--rails', '65', '--', 'true'], 'rxccl launch: --rails must be an integer in 1..64, got "65"'],
    [['launch', '-n', '2', '--rails', '--json', '--', 'true'], 'rxccl launch: --rails needs a value (R)'],
    [['launch', '-n', '2', '--rials', '2', '--', 'true'], 'rxccl launch: unknown option --rials (did you mean --rails?)'],
    [['launch', '-n', '2', '--collective-timeout', '0', '--', 'true'], 'rxccl launch: --collective-timeout must be an integer in 1..2147482647, got "0"'],
    [['launch', '-n', '2', '--transport', 'udp', '--', 'true'], 'rxccl launch: --transport must be tcp_host_staged or tcp_peer, got "udp"'],
    [['launch', '-n', '2', '-n', '3', '--', 'true'], 'rxccl launch: --ranks is given twice'],
    [['coordinator'], 'rxccl coordinator: missing --world-size (see rxccl coordinator --help)'],
    [['coordinator', '--world-size', '2', '--unique-id', 'xyz'], 'rxccl coordinator: unique id must be 32 hex digits, got "xyz"'],
    [['coordinator', '--world-size', '2', '--bind', 'nowhere'], 'rxccl coordinator: --bind must be host:port with a port in 1..65535, got "nowhere"'],
    [['coordinator', '--world-size', '2', 'extra'], 'rxccl coordinator: unexpected argument "extra" (see rxccl coordinator --help)'],
    [['bench', '--json=yes'], 'rxccl bench: --json takes no value, got "yes"'],
    [['bench', '-b', '1X'], 'rxccl bench: --min-bytes must be a size in bytes (8, 64K, 128M, 1G) >= 1, got "1X"'],
    [['bench', '-e', '0'], 'rxccl bench: --max-bytes must be a size in bytes (8, 64K, 128M, 1G) >= 1, got "0"'],
    [['bench', '-b', '1M', '-e', '8'], 'rxccl bench: --min-bytes 1048576 is larger than --max-bytes 8'],
    [['bench', '-f', '1'], 'rxccl bench: --step-factor must be an integer >= 2, got "1"'],
    [['bench', '--step', '2', '-f', '2'], 'rxccl bench: --step-factor is given twice'],
    [['bench', '--iters', '0'], 'rxccl bench: --iters must be an integer >= 1, got "0"'],
    [['bench', '-w', 'x'], 'rxccl bench: --warmup-iters must be an integer >= 0, got "x"'],
    [['bench', '-n', '2,'], 'rxccl bench: --ranks must be a comma-separated list, got "2,"'],
    [['bench', '--op', 'allreduse'], 'rxccl bench: unknown collective "allreduse" (did you mean allreduce?)'],
    [['bench', '--transport', 'udp'], 'rxccl bench: --transport must be tcp_host_staged or tcp_peer, got "udp"'],
    [['bench', '--iter', '5'], 'rxccl bench: unknown option --iter (did you mean --iters?)'],
    [['bench', '--quick=yes'], 'rxccl bench: --quick takes no value, got "yes"'],
    [['tune', '--samples', '0'], 'rxccl tune: --samples must be an integer >= 1, got "0"'],
    [['probe', '-n'], 'rxccl probe: --ranks needs a value (N)'],
    [['probe', '-n', '1'], 'rxccl probe: --ranks must be an integer >= 2, got "1"'],
    [['coordinator', '--world-size', '2', '--heartbeat-timeout', '1e3'], 'rxccl coordinator: --heartbeat-timeout must be an integer in 1..2147482647, got "1e3"'],
    [['coordinator', '--wrold-size', '2'], 'rxccl coordinator: unknown option --wrold-size (did you mean --world-size?)'],
    [['probe', '--rails', '0'], 'rxccl probe: --rails must be an integer in 1..64, got "0"'],
    [['probe', '--json', '--json'], 'rxccl probe: --json is given twice'],
    [['frobnicate'], 'rxccl: unknown command "frobnicate" (commands: launch, coordinator, bench, tune, probe, trace, doctor; see rxccl --help)'],
    [['lunch', '-n', '2'], 'rxccl: unknown command "lunch" (did you mean launch?)'],
    [['help', 'prob'], 'rxccl: unknown command "prob" (did you mean probe?)'],
    [['--verison'], 'rxccl: unknown option --verison (did you mean --version?)'],
    [['-x'], 'rxccl: unknown option -x (commands: launch, coordinator, bench, tune, probe, trace, doctor; see rxccl --help)'],
    [[], 'rxccl: missing COMMAND (commands: launch, coordinator, bench, tune, probe, trace, doctor; see rxccl --help)'],
  ])('%j fails with one line and exit status 2', async (args, message) => {
    const result = await cli(args);
    expect(result.stderr).toBe(`${message}\n`);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
  });
});

/** Through bin/rxccl.mjs, in child processes (concurrently: most of their time is start-up). */
describe.concurrent('rxccl as a process', () => {
  it('rxccl probe measures the links of a local tcp_peer job', async () => {
    const result = await runRxccl(['probe', '-n', '2', '--json'], { GX1_TOPOLOGY_PROBE_BYTES: '65536' }, ROOT, 'bin');
    expect(result.stderr).not.toContain('job failed');
    expect(result.code).toBe(0);
    const topology = JSON.parse(result.stdout) as { worldSize: number; rails: number; links: { source: number; destination: number }[] };
    expect(topology).toMatchObject({ worldSize: 2, rails: 1 });
    expect(topology.links.map(({ source, destination }) => [source, destination])).toEqual([
      [0, 1],
      [1, 0],
    ]);
  }, 60_000);

  it('rxccl bench passes its options to the collectives bench', async () => {
    const result = await runRxccl(['bench', '-n', '2', '--op', 'barrier', '--transport', 'tcp_peer', '--json'], {}, ROOT, 'bin');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { meta: { transport?: string }; rows: { op: string; worldSize: number }[] };
    expect(report.meta.transport).toBe('tcp_peer');
    expect(report.rows.map(({ op, worldSize }) => ({ op, worldSize }))).toEqual([{ op: 'barrier', worldSize: 2 }]);
  }, 60_000);

  it('bin/rxccl.mjs runs the CLI: help on stdout, a bad flag in one line with exit status 2', async () => {
    const [help, bad] = await Promise.all([runRxccl(['launch', '--help'], {}, ROOT, 'bin'), runRxccl(['coordinator', '--world-size', '2', '--rails', 'x'], {}, ROOT, 'bin')]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: rxccl launch -n N/);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('rxccl coordinator: --rails must be an integer in 1..64, got "x"\n');
  }, 30_000);
});
