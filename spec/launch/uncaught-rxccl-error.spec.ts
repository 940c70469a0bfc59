/**
 * Issue #49 item 2: a rank that dies of an rxccl error nobody caught prints one line,
 * `rxccl: CODE: message`, and exits 1; GX1_DEBUG=info adds Node's full report. Other errors, and
 * programs with an 'uncaughtException' handler of their own, are left as Node and the program
 * make them. Real processes: the handler is process-wide (vitest's workers have their own).
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../cli/rxccl-process.js';

const NO_LAUNCHER = /^rxccl: INVALID_CONFIGURATION: cannot open a session from the environment: no launcher variables found \(.*\)$/;

/** Runs the fixture with no launcher variables (only PATH), as UNCAUGHT and `env` say. */
function run(mode: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'spec/launch/fixtures/uncaught-error.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, UNCAUGHT: mode, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}

describe.concurrent('an uncaught error in a rank', () => {
  it('an rxccl error: one line, rxccl: CODE: message, no stack, exit code 1', async () => {
    const { code, stderr } = await run('rxccl');
    expect(code).toBe(1);
    expect(stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(NO_LAUNCHER)]);
  }, 60_000);

  it('with GX1_DEBUG=info: the line, then Node\'s full report with the stack', async () => {
    const { code, stderr } = await run('rxccl', { GX1_DEBUG: 'info' });
    expect(code).toBe(1);
    const lines = stderr.trimEnd().split('\n');
    expect(lines[0]).toMatch(NO_LAUNCHER);
    expect(stderr).toMatch(/\nConfigurationError: cannot open a session from the environment: .*\n {4}at noLauncherError \(/);
    expect(lines.at(-1)).toBe(`Node.js ${process.version}`);
  }, 60_000);

  it('another error: Node reports it as without rxccl (stack, exit code 1)', async () => {
    const { code, stderr } = await run('plain');
    expect(code).toBe(1);
    expect(stderr).not.toMatch(/^rxccl: /m);
    expect(stderr).toMatch(/\nTypeError: a bug of the program, not an rxccl error\n {4}at .*uncaught-error\.ts:\d+:\d+/);
  }, 60_000);

  it.each(['handler-before', 'handler-after'])('the program\'s own uncaughtException handler decides (%s openSession())', async (mode) => {
    const { code, stderr } = await run(mode);
    expect(code).toBe(5);
    expect(stderr).toBe("the program's handler: INVALID_CONFIGURATION\n");
  }, 60_000);
});
