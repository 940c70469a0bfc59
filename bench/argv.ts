/** A bench's command line: `--name value` options and sizes written `64K`, `1M`, `2G`. */

/** The value after `name` on the command line, else `fallback`. */
export function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : process.argv[at + 1]!;
}

/** The whole number after `name` on the command line (at least `min`), else `fallback`. */
export function wholeNumber(name: string, fallback: number, min: number): number {
  const value = Number(option(name, String(fallback)));
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number of at least ${min}, got ${option(name, '')}`);
  return value;
}

/** A size in bytes: a whole number with an optional K, M or G (powers of 1024). */
export function bytesOf(text: string): number {
  const match = /^(\d+)([KMG]?)$/.exec(text);
  if (match === null) throw new Error(`a size is a whole number with an optional K, M or G, got ${text}`);
  return Number(match[1]) * 1024 ** ' KMG'.indexOf(match[2] || ' ');
}
