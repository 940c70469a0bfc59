import { RxcclError } from '../errors.js';
import { UsageError } from './args.js';
import { benchCommand } from './bench-command.js';
import type { Command } from './command.js';
import { coordinatorCommand } from './coordinator-command.js';
import { launchCommand } from './launch-command.js';
import { probeCommand } from './probe-command.js';

const COMMANDS: readonly Command[] = [launchCommand, coordinatorCommand, benchCommand, probeCommand];

const OVERVIEW = [
  'usage: rxccl COMMAND [options]',
  '',
  'commands:',
  ...COMMANDS.map((command) => `  ${command.name.padEnd(12)} ${command.brief}`),
  '',
  'rxccl COMMAND --help describes each command.',
  '',
].join('\n');

/**
 * The `rxccl` command line (bin/rxccl.mjs calls it). Resolves with the exit status: 0 on success,
 * 2 for a command line or configuration the user got wrong, 1 for a failure while running.
 * Errors are reported in one line, prefixed with the command.
 */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(OVERVIEW);
    return 0;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (command === undefined) {
    const problem = name === undefined ? 'missing COMMAND' : `unknown command ${JSON.stringify(name)}`;
    process.stderr.write(`rxccl: ${problem} (one of ${COMMANDS.map((candidate) => candidate.name).join(', ')}; see rxccl --help)\n`);
    return 2;
  }
  try {
    return await command.execute(rest);
  } catch (error) {
    const usage = error instanceof UsageError || (error instanceof RxcclError && error.code === 'INVALID_CONFIGURATION');
    process.stderr.write(`rxccl ${command.name}: ${oneLine(error)}\n`);
    return usage ? 2 : 1;
  }
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, ' ');
}
