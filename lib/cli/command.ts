import { type CommandLine, type Flags, parseArgs, type Values } from './args.js';
import { helpText } from './help-text.js';

/** One `rxccl` subcommand: its command line, and what it does with the parsed values. */
export interface Command extends CommandLine {
  /** Runs the command on its arguments (after the command name); resolves with the exit status. */
  execute(argv: readonly string[]): Promise<number>;
}

export function defineCommand<F extends Flags>(
  line: CommandLine<F>,
  run: (values: Values<F>, rest: string[]) => Promise<number>,
): Command {
  return {
    ...line,
    async execute(argv) {
      const parsed = parseArgs(line, argv);
      if (parsed.help) {
        process.stdout.write(helpText(line));
        return 0;
      }
      return run(parsed.values, parsed.rest);
    },
  };
}
