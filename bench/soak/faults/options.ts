import { PLANES, type Plane } from './planes.js';

export interface SoakOptions {
  /** How long the soak runs: `minutes * 60 / killEverySeconds` epochs (each also spends a few seconds setting up and recovering). */
  readonly minutes: number;
  /** How long each job works before a rank of it is killed. */
  readonly killEverySeconds: number;
  readonly ranks: number;
  /** The planes the epochs take in turn. */
  readonly planes: readonly Plane[];
  readonly json: boolean;
}

export const USAGE =
  'npx tsx bench/soak/faults/run.ts [--minutes 30] [--kill-every 60] [--ranks 4] [--planes native,js,coordinator] [--json]';

function value(args: readonly string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const given = args[at + 1];
  if (given === undefined) throw new Error(`${name} needs a value: ${USAGE}`);
  return given;
}

function positive(args: readonly string[], name: string, fallback: number, integer = false): number {
  const given = value(args, name);
  const number = given === undefined ? fallback : Number(given);
  if (!Number.isFinite(number) || number <= 0 || (integer && !Number.isInteger(number))) throw new Error(`${name} must be a positive ${integer ? 'integer' : 'number'}, got ${given}`);
  return number;
}

export function parseSoakOptions(args: readonly string[]): SoakOptions {
  const known = new Set(['--minutes', '--kill-every', '--ranks', '--planes', '--json']);
  const unknown = args.filter((arg, at) => arg.startsWith('-') && !known.has(arg) && !known.has(args[at - 1] ?? ''));
  if (unknown.length > 0) throw new Error(`unknown option ${unknown[0]}: ${USAGE}`);
  const planes = (value(args, '--planes') ?? PLANES.join(',')).split(',');
  const wrong = planes.find((plane) => !(PLANES as readonly string[]).includes(plane));
  if (wrong !== undefined) throw new Error(`--planes takes ${PLANES.join(', ')}, got ${wrong}`);
  const ranks = positive(args, '--ranks', 4, true);
  // One rank is killed and one must survive to see it.
  if (ranks < 2) throw new Error('--ranks must be at least 2');
  return {
    minutes: positive(args, '--minutes', 30),
    killEverySeconds: positive(args, '--kill-every', 60),
    ranks,
    planes: planes as Plane[],
    json: args.includes('--json'),
  };
}

export function epochCount(options: SoakOptions): number {
  return Math.max(1, Math.floor((options.minutes * 60) / options.killEverySeconds));
}
