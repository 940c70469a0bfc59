/**
 * `rxccl launch --collective-timeout` bounds every collective, on every transport and plane: a
 * rank of a 4-rank job stopped (SIGSTOP) between two all-reduces is named by the others within
 * 7 s of stopping under `--collective-timeout 5000`, where the native plane once waited the
 * session timeout (300 s). Real processes; the times are the ranks' own clocks (one host), so
 * the launcher's start-up and its ending of the stopped rank do not count.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { startRxccl } from '../cli/rxccl-process.js';
import { compiledNode } from '../helpers/compiled-script.js';

const FIXTURE = 'spec/hangs/fixtures/stopped-in-collective.ts';

/** Milliseconds from the stop to the first survivor's error, and every survivor's error. */
function named(stdout: string): { afterMs: number; errors: string[] } {
  const stoppedAt = Number(/\[rank 3\] stopping at (\d+)/.exec(stdout)?.[1]);
  const failures = [...stdout.matchAll(/\[rank [012]\] failed at (\d+): (.*)/g)];
  return { afterMs: Math.min(...failures.map((failure) => Number(failure[1]))) - stoppedAt, errors: failures.map((failure) => failure[2]!) };
}

describe('a stopped rank under --collective-timeout 5000', () => {
  it.each([
    ['tcp_peer, its default plane', {}],
    ['tcp_peer, the JS plane', { GX1_DATA_PLANE: 'js' }],
    ['tcp_host_staged', { GX1_COLLECTIVE_TRANSPORT: 'tcp_host_staged' }],
  ])('is named within 7 s on %s', async (name, env) => {
    const launch = startRxccl(['launch', '-n', '4', '--collective-timeout', '5000', '--', ...compiledNode(FIXTURE)], env);
    // A job still waiting when the test gives up is ended (the launcher ends its ranks, the stopped one too).
    onTestFinished(() => void launch.child.kill('SIGINT'));
    const { code, stdout, stderr } = await launch.finished;
    expect(code, stderr).toBe(1);
    const { afterMs, errors } = named(stdout);
    console.log(`${name}: rank 3 named ${afterMs} ms after it stopped`);
    expect(errors, stdout).toHaveLength(3);
    for (const error of errors) expect(error).toContain('missing ranks [3] timed out');
    expect(stderr).toContain('missing ranks [3] timed out');
    expect(afterMs).toBeGreaterThanOrEqual(4_000);
    expect(afterMs).toBeLessThan(7_000);
  }, 90_000);
});
