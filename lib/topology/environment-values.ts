import { ConfigurationError } from '../errors.js';

/**
 * How the reference reads its tuning variables, for every parser of lib/topology: Rust's trim and
 * unsigned-integer parse, and its two errors for a value (`InvalidEnvironment`) and a rank
 * (`RankOutOfRange`), with the reference's texts.
 */

/** Ranks are u32 in the reference; a larger number is a parse error there, not a range error. */
export const MAX_U32 = 0xffff_ffff;

/**
 * Rust's `str::trim` removes Unicode White_Space, which differs from String.prototype.trim: it
 * also strips U+0085 (next line) and keeps U+FEFF (byte order mark).
 */
const RUST_WHITESPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const SURROUNDING_WHITESPACE = new RegExp(`^${RUST_WHITESPACE}+|${RUST_WHITESPACE}+$`, 'g');

export function trimWhitespace(text: string): string {
  return text.replace(SURROUNDING_WHITESPACE, '');
}

/**
 * The value of a Rust unsigned-integer parse (`"+7"` and `"007"` are 7; no sign other than `+`,
 * no whitespace), or undefined where Rust fails or the value exceeds `maximum`. The reference's
 * u64 and usize go to 2^64 - 1; here they stop at Number.MAX_SAFE_INTEGER, the largest integer a
 * number holds exactly, and a larger value is refused rather than silently rounded.
 */
export function parseUnsigned(text: string, maximum = Number.MAX_SAFE_INTEGER): number | undefined {
  if (!/^\+?[0-9]+$/.test(text)) return undefined;
  const value = Number(text);
  return value <= maximum ? value : undefined;
}

/**
 * A count the reference reads as an untrimmed unsigned integer and refuses at zero, naming the
 * value "0" however it was written ("00" too), as it does.
 */
export function parsePositive(name: string, value: string): number {
  const parsed = parseUnsigned(value);
  if (parsed === 0) throw invalidEnvironment(name, '0');
  if (parsed === undefined) throw invalidEnvironment(name, value);
  return parsed;
}

/** `auto` as the reference matches it: trimmed, `eq_ignore_ascii_case` (only ASCII letters fold). */
export function isAuto(value: string): boolean {
  return trimWhitespace(value).replace(/[A-Z]/g, (letter) => letter.toLowerCase()) === 'auto';
}

/** The reference's `InvalidEnvironment` error; Rust's `{:?}` quoting becomes JSON quoting. */
export function invalidEnvironment(name: string, value: string): ConfigurationError {
  return new ConfigurationError(`invalid ${name} value ${JSON.stringify(value)}`);
}

export function rankOutOfRange(rank: number, worldSize: number): ConfigurationError {
  return new ConfigurationError(`topology rank ${rank} is outside world size ${worldSize}`);
}
