/**
 * A small argument parser for the `rxccl` commands (no dependency: the CLI ships with the library).
 * It accepts `--name value`, `--name=value`, `-n value`, `-n4` and boolean `--json`; `--` or the
 * first word that is not an option starts the trailing arguments (the command `launch` runs).
 */

/** A command line the user got wrong: reported in one line, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export type FlagKind = 'integer' | 'string' | 'boolean';

export interface Flag {
  readonly kind: FlagKind;
  /** One-letter alias, e.g. `n` for `-n`. */
  readonly short?: string;
  /** The value's placeholder in help, e.g. `N`. */
  readonly value?: string;
  readonly help: string;
  readonly required?: boolean;
  /** Smallest accepted integer (default 0). */
  readonly min?: number;
}

export type Flags = Readonly<Record<string, Flag>>;

type ValueOf<F extends Flag> = F['kind'] extends 'integer' ? number : F['kind'] extends 'boolean' ? boolean : string;

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
  const values: Record<string, string | number | boolean> = {};
  const rest: string[] = [];
  const byShort = new Map(Object.entries(command.flags).flatMap(([name, flag]) => (flag.short === undefined ? [] : [[flag.short, name] as const])));
  let index = 0;
  for (; index < argv.length; index++) {
    const word = argv[index]!;
    if (word === '--') {
      index += 1;
      break;
    }
    if (word === '--help' || word === '-h') return { help: true };
    if (!word.startsWith('-') || word === '-') break;
    let name: string;
    let inline: string | undefined;
    if (word.startsWith('--')) {
      const equals = word.indexOf('=');
      name = equals < 0 ? word.slice(2) : word.slice(2, equals);
      inline = equals < 0 ? undefined : word.slice(equals + 1);
      if (!(name in command.flags)) throw unknownOption(command, `--${name}`);
    } else {
      const long = byShort.get(word[1]!);
      if (long === undefined) throw unknownOption(command, word.slice(0, 2));
      name = long;
      inline = word.length > 2 ? word.slice(2).replace(/^=/, '') : undefined;
    }
    const flag = command.flags[name]!;
    if (name in values) throw new UsageError(`--${name} is given twice`);
    if (flag.kind === 'boolean') {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value, got ${JSON.stringify(inline)}`);
      values[name] = true;
      continue;
    }
    let text = inline;
    if (text === undefined) {
      index += 1;
      text = argv[index];
      if (text === undefined) throw new UsageError(`--${name} needs a value (${flag.value ?? flag.kind})`);
    }
    values[name] = flag.kind === 'integer' ? integer(name, text, flag.min ?? 0) : text;
  }
  rest.push(...argv.slice(index));
  if (rest.length > 0 && command.trailing === undefined) {
    throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])} (see rxccl ${command.name} --help)`);
  }
  const missing = Object.entries(command.flags).filter(([name, flag]) => flag.required === true && !(name in values));
  if (missing.length > 0) {
    throw new UsageError(`missing ${missing.map(([name, flag]) => optionName(name, flag)).join(', ')} (see rxccl ${command.name} --help)`);
  }
  return { help: false, values: values as Values<F>, rest };
}

function integer(name: string, text: string, min: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(`--${name} must be an integer >= ${min}, got ${JSON.stringify(text)}`);
  }
  return value;
}

function optionName(name: string, flag: Flag): string {
  return flag.short === undefined ? `--${name}` : `-${flag.short}/--${name}`;
}

function unknownOption(command: CommandLine, option: string): UsageError {
  return new UsageError(`unknown option ${option} (see rxccl ${command.name} --help)`);
}

/** The text `rxccl NAME --help` prints. */
export function helpText(command: CommandLine): string {
  const rows = Object.entries(command.flags).map(([name, flag]) => {
    const value = flag.kind === 'boolean' ? '' : ` ${flag.value ?? flag.kind.toUpperCase()}`;
    const spelled = `${flag.short === undefined ? '    ' : `-${flag.short}, `}--${name}${value}`;
    return [spelled, flag.help + (flag.required === true ? ' (required)' : '')] as const;
  });
  rows.push(['-h, --help', 'show this help']);
  const width = Math.max(...rows.map(([spelled]) => spelled.length));
  return [
    `usage: rxccl ${command.name} ${command.synopsis}`,
    '',
    command.summary,
    '',
    'options:',
    ...rows.map(([spelled, help]) => `  ${spelled.padEnd(width)}  ${help}`),
    '',
  ].join('\n');
}
