import type { CommandLine } from './args.js';

/** The text `rxccl NAME --help` (and `rxccl help NAME`) prints. */
export function helpText(command: CommandLine): string {
  const rows = Object.entries(command.flags).map(([name, flag]) => {
    const value = flag.kind === 'boolean' ? '' : ` ${flag.value ?? flag.kind.toUpperCase()}`;
    const spelled = `${flag.short === undefined ? '    ' : `-${flag.short}, `}--${name}${value}`;
    const aliases = flag.aliases === undefined ? '' : ` (also ${flag.aliases.map((alias) => `--${alias}`).join(', ')})`;
    return [spelled, flag.help + (flag.required === true ? ' (required)' : '') + aliases] as const;
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
