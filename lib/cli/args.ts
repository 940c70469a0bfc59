/**
 * The `rxccl` commands' argument parsing, over Node's `util.parseArgs` (no dependency: the CLI
 * ships with the library). `util.parseArgs` splits the words (`--name value`, `--name=value`,
 * `-n value`, `-n4`, boolean `--json`); this module checks them against a command's flags and
 * turns every mistake into a one-line UsageError that names the flag. `--` or the first word
 * that is not an option starts the trailing arguments (the command `launch` runs), so options of
 * that command are never read as ours.
 */
import { parseArgs as splitWords } from 'node:util';
import { didYouMean } from '../diagnostics/did-you-mean.js';
import type { Flag } from './flag.js';
import { flagValue } from './flag-value.js';
import { UsageError } from './usage-error.js';

export type { Flag, FlagKind } from './flag.js';

export type Flags = Readonly<Record<string, Flag>>;

type Scalar<F extends Flag> = F['kind'] extends 'string' ? string : F['kind'] extends 'boolean' ? boolean : number;
type ValueOf<F extends Flag> = F['list'] extends true ? Scalar<F>[] : Scalar<F>;

/** Parsed values: required flags are always present. */
export type Values<F extends Flags> = { [N in keyof F as F[N]['required'] extends true ? N : never]: ValueOf<F[N]> } & {
  [N in keyof F as F[N]['required'] extends true ? never : N]?: ValueOf<F[N]>;
};

export interface CommandLine<F extends Flags = Flags> {
  readonly name: string;
  /** One line, for `rxccl --help`. */
  readonly brief: string;
  /** What `rxccl NAME --help` explains. */
  readonly summary: string;
  /** The synopsis after `rxccl NAME`, e.g. `-n N [options] -- COMMAND [ARGS...]`. */
  readonly synopsis: string;
  readonly flags: F;
  /** Set when the command takes trailing arguments: what they are (e.g. `COMMAND`). */
  readonly trailing?: string;
}

export type Parsed<F extends Flags> = { readonly help: true } | { readonly help: false; readonly values: Values<F>; readonly rest: string[] };

export function parseArgs<F extends Flags>(command: CommandLine<F>, argv: readonly string[]): Parsed<F> {
  const byLongName = new Map(Object.entries(command.flags).flatMap(([name, flag]) => [name, ...(flag.aliases ?? [])].map((long) => [long, name] as const)));
  // Not strict: unknown options and missing values come back as tokens, for messages of our own.
  const { tokens } = splitWords({
    args: [...argv],
    options: {
      ...Object.fromEntries([...byLongName].map(([long, name]) => [long, wordShape(command.flags[name]!, long === name)])),
      help: { type: 'boolean', short: 'h' },
    },
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: Record<string, unknown> = {};
  let rest: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'option-terminator') {
      rest = argv.slice(token.index + 1);
      break;
    }
    if (token.kind === 'positional') {
      rest = argv.slice(token.index);
      break;
    }
    if (token.name === 'help') return { help: true };
    const name = byLongName.get(token.name);
    if (name === undefined) throw unknownOption(command, token.rawName, [...byLongName.keys(), 'help']);
    const flag = command.flags[name]!;
    if (name in values) throw new UsageError(`--${name} is given twice`);
    if (flag.kind === 'boolean') {
      if (token.value !== undefined) throw new UsageError(`--${name} takes no value, got ${JSON.stringify(token.value)}`);
      values[name] = true;
      continue;
    }
    // The next word was taken as the value even when it is an option: `--rails --json`.
    const missing = token.value === undefined || (!token.inlineValue && token.value.startsWith('-') && token.value !== '-');
    if (missing) throw new UsageError(`--${name} needs a value (${flag.value ?? flag.kind})`);
    // `-n=4` means `-n 4`, as `--ranks=4` does.
    const text = token.inlineValue && !token.rawName.startsWith('--') ? token.value!.replace(/^=/, '') : token.value!;
    values[name] = flagValue(`--${name}`, flag, text);
  }
  if (rest.length > 0 && command.trailing === undefined) {
    throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])} (see rxccl ${command.name} --help)`);
  }
  const missing = Object.entries(command.flags).filter(([name, flag]) => flag.required === true && !(name in values));
  if (missing.length > 0) {
    throw new UsageError(`missing ${missing.map(([name, flag]) => optionName(name, flag)).join(', ')} (see rxccl ${command.name} --help)`);
  }
  return { help: false, values: values as Values<F>, rest };
}

/** How util.parseArgs splits a flag's words; only the flag's own name carries its short form. */
function wordShape(flag: Flag, canonical: boolean): { type: 'string' | 'boolean'; short?: string } {
  const type = flag.kind === 'boolean' ? 'boolean' : 'string';
  return canonical && flag.short !== undefined ? { type, short: flag.short } : { type };
}

function optionName(name: string, flag: Flag): string {
  return flag.short === undefined ? `--${name}` : `-${flag.short}/--${name}`;
}

function unknownOption(command: CommandLine, spelled: string, longNames: readonly string[]): UsageError {
  const guess = spelled.startsWith('--') ? didYouMean(spelled.slice(2), longNames) : null;
  return new UsageError(`unknown option ${spelled} (${guess === null ? `see rxccl ${command.name} --help` : `did you mean --${guess}?`})`);
}
