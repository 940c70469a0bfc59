import type { RxcclError } from '../errors.js';

/**
 * The one line a rank prints on stderr when it dies of an rxccl error (`rxccl: CODE: message`,
 * see `reportUncaughtRxcclErrors`), which is also how `rxccl launch` learns why a rank failed: the
 * launcher reads it back from the rank's stderr to name the root cause in its own last line.
 */
const LINE = /^rxccl: ([A-Z][A-Z_]*): (.+)$/;

export function rankErrorLine(error: RxcclError): string {
  return `rxccl: ${error.code}: ${error.message.replace(/\s*\n\s*/g, ' ')}`;
}

/** `CODE: message` when `line` is a rank's error line, else null. */
export function parseRankErrorLine(line: string): string | null {
  const match = LINE.exec(line);
  return match === null ? null : `${match[1]}: ${match[2]}`;
}

/**
 * The ranks an error's message names, in the reference wording (`direct peer rank 2 left`,
 * `missing ranks [1,3]`): what a rank's error line (or the coordinator's error) tells the launcher
 * about other ranks, which cross the process boundary only as this text.
 */
export function ranksNamedBy(message: string): number[] {
  return [...message.matchAll(/\brank (\d+)\b|\branks \[([\d,]*)\]/g)].flatMap(([, one, list]) =>
    one !== undefined ? [Number(one)] : list!.split(',').filter((rank) => rank !== '').map(Number),
  );
}
