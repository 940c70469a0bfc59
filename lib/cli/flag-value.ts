import type { Flag } from './flag.js';
import { UsageError } from './usage-error.js';

const SIZE_UNITS: Readonly<Record<string, number>> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/**
 * Converts the text given for a flag (`spelled`, e.g. `--rails`) into its value: a string, a
 * whole number in the flag's range, or an array of them for a list flag (`2,4`).
 */
export function flagValue(spelled: string, flag: Flag, text: string): string | number | string[] | number[] {
  if (flag.list !== true) return scalar(spelled, flag, text);
  const items = text.split(',').map((item) => item.trim());
  if (items.some((item) => item.length === 0)) throw new UsageError(`${spelled} must be a comma-separated list, got ${JSON.stringify(text)}`);
  return items.map((item) => scalar(spelled, flag, item)) as string[] | number[];
}

function scalar(spelled: string, flag: Flag, text: string): string | number {
  if (flag.kind === 'string') return text;
  const value = flag.kind === 'size' ? bytes(text) : wholeNumber(text);
  const min = flag.min ?? 0;
  if (value === null || value < min || (flag.max !== undefined && value > flag.max)) {
    const range = flag.max === undefined ? `>= ${min}` : `in ${min}..${flag.max}`;
    const what = flag.kind === 'size' ? `a size in bytes (8, 64K, 128M, 1G) ${range}` : `an integer ${range}`;
    throw new UsageError(`${spelled} must be ${what}, got ${JSON.stringify(text)}`);
  }
  return value;
}

function wholeNumber(text: string): number | null {
  const value = Number(text);
  return /^\d+$/.test(text.trim()) && Number.isSafeInteger(value) ? value : null;
}

/** `128M` is 128 MiB: nccl-tests' suffixes are powers of 1024. */
function bytes(text: string): number | null {
  const match = /^(\d+)([KMG]?)$/i.exec(text.trim());
  if (match === null) return null;
  const value = Number(match[1]) * SIZE_UNITS[match[2]!.toLowerCase()]!;
  return Number.isSafeInteger(value) ? value : null;
}
