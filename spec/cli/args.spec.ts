/**
 * The argument parser (lib/cli/args.ts over util.parseArgs) on a command of its own: every way a
 * value is spelled, every usage error, and the typo suggestions.
 */
import { describe, expect, it } from 'vitest';
import { type CommandLine, parseArgs } from '../../lib/cli/args.js';
import { didYouMean } from '../../lib/diagnostics/did-you-mean.js';

const TOOL = {
  name: 'tool',
  brief: 'a test command',
  summary: 'a test command',
  synopsis: '[options] -- COMMAND',
  trailing: 'COMMAND',
  flags: {
    ranks: { kind: 'integer', short: 'n', min: 1, list: true, aliases: ['world-sizes'], help: 'ranks' },
    rails: { kind: 'integer', min: 1, max: 64, help: 'rails' },
    'min-bytes': { kind: 'size', short: 'b', min: 1, help: 'bytes' },
    name: { kind: 'string', required: true, help: 'a name' },
    json: { kind: 'boolean', help: 'json' },
  },
} as const satisfies CommandLine;

const NO_TRAILING = { ...TOOL, trailing: undefined } satisfies CommandLine;

function parse(...argv: string[]) {
  const parsed = parseArgs(TOOL, argv);
  if (parsed.help) throw new Error('help');
  return parsed;
}

describe('parseArgs', () => {
  it('reads every spelling of a value', () => {
    expect(parse('--name', 'x', '-n', '2').values).toEqual({ name: 'x', ranks: [2] });
    expect(parse('--name=x', '-n4').values).toEqual({ name: 'x', ranks: [4] });
    expect(parse('--name', 'x', '-n=3').values).toEqual({ name: 'x', ranks: [3] });
    expect(parse('--name', 'x', '--world-sizes', '2,4').values).toEqual({ name: 'x', ranks: [2, 4] });
    expect(parse('--name', 'x', '--rails', '64', '--json').values).toEqual({ name: 'x', rails: 64, json: true });
  });

  it('reads sizes with K, M and G suffixes as powers of 1024', () => {
    expect(parse('--name', 'x', '-b', '8').values['min-bytes']).toBe(8);
    expect(parse('--name', 'x', '-b', '64K').values['min-bytes']).toBe(65536);
    expect(parse('--name', 'x', '--min-bytes', '128m').values['min-bytes']).toBe(128 * 1024 * 1024);
    expect(parse('--name', 'x', '-b', '1G').values['min-bytes']).toBe(1024 ** 3);
  });

  it('stops at -- or at the first word that is not an option', () => {
    expect(parse('--name', 'x', '--', 'node', '--json').rest).toEqual(['node', '--json']);
    expect(parse('--name', 'x', 'node', '--rails', '2').rest).toEqual(['node', '--rails', '2']);
    expect(parse('--name', 'x', '-n', '2', 'node').values).toEqual({ name: 'x', ranks: [2] });
  });

  it.each([
    [['--name', 'x', '--help'], true],
    [['-h'], true],
    [['--', '--help'], false],
  ])('%j asks for help: %s', (argv, help) => {
    const run = () => parseArgs(TOOL, argv);
    if (help) expect(run()).toEqual({ help: true });
    else expect(run).toThrow('missing --name');
  });

  it.each([
    [['--name', 'x', '--bogus'], 'unknown option --bogus (see rxccl tool --help)'],
    [['--name', 'x', '--rials', '2'], 'unknown option --rials (did you mean --rails?)'],
    [['--name', 'x', '--world-size', '2'], 'unknown option --world-size (did you mean --world-sizes?)'],
    [['--name', 'x', '--hlep'], 'unknown option --hlep (did you mean --help?)'],
    [['--name', 'x', '-q'], 'unknown option -q (see rxccl tool --help)'],
    [['--name', 'x', '--rails'], '--rails needs a value (integer)'],
    [['--name', 'x', '--rails', '-n', '2'], '--rails needs a value (integer)'],
    [['--name', 'x', '--json=1'], '--json takes no value, got "1"'],
    [['--name', 'x', '--rails', '1', '--rails', '2'], '--rails is given twice'],
    [['--name', 'x', '-n', '2', '--world-sizes', '4'], '--ranks is given twice'],
    [['--name', 'x', '--rails', '0'], '--rails must be an integer in 1..64, got "0"'],
    [['--name', 'x', '--rails', '65'], '--rails must be an integer in 1..64, got "65"'],
    [['--name', 'x', '--rails', '2.5'], '--rails must be an integer in 1..64, got "2.5"'],
    [['--name', 'x', '-n', '0'], '--ranks must be an integer >= 1, got "0"'],
    [['--name', 'x', '-n', '2,x'], '--ranks must be an integer >= 1, got "x"'],
    [['--name', 'x', '-n', '2,,4'], '--ranks must be a comma-separated list, got "2,,4"'],
    [['--name', 'x', '-b', '1T'], '--min-bytes must be a size in bytes (8, 64K, 128M, 1G) >= 1, got "1T"'],
    [['--name', 'x', '-b', '0'], '--min-bytes must be a size in bytes (8, 64K, 128M, 1G) >= 1, got "0"'],
    [['--rails', '2'], 'missing --name (see rxccl tool --help)'],
  ])('%j is a usage error: %s', (argv, message) => {
    expect(() => parseArgs(TOOL, argv)).toThrow(expect.objectContaining({ name: 'UsageError', message }));
  });

  it('refuses trailing words where the command takes none', () => {
    expect(() => parseArgs(NO_TRAILING, ['--name', 'x', 'extra'])).toThrow('unexpected argument "extra" (see rxccl tool --help)');
  });
});

describe('didYouMean', () => {
  it('suggests the closest candidate within a third of the word', () => {
    expect(didYouMean('lunch', ['launch', 'coordinator', 'bench', 'probe'])).toBe('launch');
    expect(didYouMean('cordinator', ['launch', 'coordinator'])).toBe('coordinator');
    expect(didYouMean('benhc', ['bench', 'probe'])).toBe('bench');
    expect(didYouMean('BENCH', ['bench'])).toBe('bench');
    expect(didYouMean('frobnicate', ['launch', 'coordinator', 'bench', 'probe'])).toBeNull();
    expect(didYouMean('x', ['launch'])).toBeNull();
  });
});
