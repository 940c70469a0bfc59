import { debuglog } from 'node:util';

/** How much a process says about its job, least to most: `GX1_DEBUG=off|warn|info|trace`. */
export type DebugLevel = 'off' | 'warn' | 'info' | 'trace';

const LEVELS: readonly DebugLevel[] = ['off', 'warn', 'info', 'trace'];

/**
 * The library's debug output (the role of NCCL_DEBUG): `warn` (the default) says only what a
 * user of a stuck job needs (ranks that have not joined, a collective waiting long); `info` adds
 * connections and joins; `trace` every collective and point-to-point match. Lines carry sizes,
 * sequences and names, never a payload byte.
 *
 * `NODE_DEBUG=rxccl` (Node's own switch, `util.debuglog`) turns on everything up to `trace` and
 * writes through debuglog; otherwise lines go to stderr as `rxccl[pid] LEVEL message`.
 */
export class DebugLog {
  readonly level: DebugLevel;

  constructor(
    level: DebugLevel,
    private readonly write: (level: Exclude<DebugLevel, 'off'>, message: string) => void,
  ) {
    this.level = level;
  }

  /** Reads `GX1_DEBUG` and `NODE_DEBUG` (an unknown level is reported once and taken as warn). */
  static fromEnvironment(env: Readonly<Record<string, string | undefined>>, stderr: (text: string) => void = (text) => process.stderr.write(text)): DebugLog {
    const viaNode = /(^|,)\s*(rxccl|\*)\s*(,|$)/i.test(env.NODE_DEBUG ?? '');
    const asked = env.GX1_DEBUG?.trim().toLowerCase();
    let level: DebugLevel = viaNode ? 'trace' : 'warn';
    if (asked !== undefined && asked !== '') {
      if ((LEVELS as readonly string[]).includes(asked)) level = asked as DebugLevel;
      else stderr(`rxccl[${process.pid}] WARN GX1_DEBUG=${env.GX1_DEBUG} is not one of ${LEVELS.join('|')}; using ${level}\n`);
    }
    if (viaNode) {
      const node = debuglog('rxccl');
      return new DebugLog(level, (at, message) => node('%s %s', at.toUpperCase(), message));
    }
    return new DebugLog(level, (at, message) => stderr(`rxccl[${process.pid}] ${at.toUpperCase()} ${message}\n`));
  }

  /** Whether lines at `level` are written: check before building an expensive one. */
  enabled(level: Exclude<DebugLevel, 'off'>): boolean {
    return LEVELS.indexOf(level) <= LEVELS.indexOf(this.level);
  }

  warn(message: string): void {
    this.log('warn', message);
  }

  info(message: string): void {
    this.log('info', message);
  }

  trace(message: string): void {
    this.log('trace', message);
  }

  private log(level: Exclude<DebugLevel, 'off'>, message: string): void {
    if (this.enabled(level)) this.write(level, message);
  }
}

/** The process's debug log, configured from its environment when first loaded. */
export const debugLog = DebugLog.fromEnvironment(process.env);
