import { RxcclError } from '../errors.js';
import { benchCommand } from './bench-command.js';
import { tuneCommand } from './tune-command.js';
import type { Command } from './command.js';
import { coordinatorCommand } from './coordinator-command.js';
import { didYouMean } from '../diagnostics/did-you-mean.js';
import { doctorCommand } from './doctor-command.js';
import { helpText } from './help-text.js';
import { warnUnknownVariables } from '../launch/known-variables.js';
import { launchCommand } from './launch-command.js';
import { packageVersion } from './package-version.js';
import { probeCommand } from './probe-command.js';
import { traceCommand } from './trace-command.js';
import { UsageError } from './usage-error.js';

const COMMANDS: readonly Command[] = [launchCommand, coordinatorCommand, benchCommand, tuneCommand, probeCommand, traceCommand, doctorCommand];
const NAMES = COMMANDS.map((command) => command.name);

const OVERVIEW = [
  'usage: rxccl COMMAND [options]',
  '',
  'commands:',
  ...COMMANDS.map((command) => `  ${command.name.padEnd(12)} ${command.brief}`),
  '',
  'rxccl help COMMAND (or rxccl COMMAND --help) describes each command; rxccl --version prints the version.',
  '',
].join('\n');

/**
 * The `rxccl` command line (bin/rxccl.mjs calls it). Resolves with the exit status: 0 on success,
 * 2 for a command line or configuration the user got wrong, 1 for a failure while running.
 * Errors are reported in one line, prefixed with the command.
 */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version') {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  if (name === undefined) {
    process.stderr.write(`rxccl: missing COMMAND (commands: ${NAMES.join(', ')}; see rxccl --help)\n`);
    return 2;
  }
  if (name === '--help' || name === '-h' || (name === 'help' && rest.length === 0)) {
    process.stdout.write(OVERVIEW);
    return 0;
  }
  const wanted = name === 'help' ? rest[0]! : name;
  const command = COMMANDS.find((candidate) => candidate.name === wanted);
  if (command === undefined) {
    process.stderr.write(`rxccl: ${unknown(wanted)}\n`);
    return 2;
  }
  if (name === 'help') {
    process.stdout.write(helpText(command));
    return 0;
  }
  warnUnknownVariables(process.env);
  try {
    return await command.execute(rest);
  } catch (error) {
    const usage = error instanceof UsageError || (error instanceof RxcclError && error.code === 'INVALID_CONFIGURATION');
    process.stderr.write(`rxccl ${command.name}: ${oneLine(error)}\n`);
    return usage ? 2 : 1;
  }
}

function unknown(word: string): string {
  const option = word.startsWith('-');
  const guess = didYouMean(option ? word.replace(/^-+/, '') : word, option ? ['version', 'help'] : NAMES);
  const what = option ? `unknown option ${word}` : `unknown command ${JSON.stringify(word)}`;
  if (guess !== null) return `${what} (did you mean ${option ? `--${guess}` : guess}?)`;
  return `${what} (commands: ${NAMES.join(', ')}; see rxccl --help)`;
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, ' ');
}
