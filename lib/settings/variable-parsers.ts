import { ConfigurationError } from '../errors.js';
import { validateTimeout } from '../transport/transport-kind.js';

/**
 * The parsers of the settings table's variables that no other layer owns: each takes the text as
 * set (undefined where unset) and the variable's name, returns the value (the default where unset)
 * and refuses a bad one naming the variable. Parsers a concept owns stay with it (`parseRails` in
 * transport, `parseAlgorithmPolicy` in topology, ...); the table points at them.
 */

/** Whether `text` holds a value: set, and not only blanks. */
export function isSet(text: string | undefined): text is string {
  return text !== undefined && text.trim() !== '';
}

/** The text as set (a path, a list the job's world size checks later): never refused here. */
export function asText(text: string | undefined): string | undefined {
  return text;
}

/** Trimmed, or undefined where unset or blank (a directory, a host). */
export function trimmedText(text: string | undefined): string | undefined {
  return isSet(text) ? text.trim() : undefined;
}

/** Whole milliseconds, 1 up to the longest timer (`validateTimeout`); undefined where unset or blank. */
export function timeoutMs(text: string | undefined, variable: string): number | undefined {
  if (!isSet(text)) return undefined;
  const digits = text.trim();
  if (!/^\d+$/.test(digits)) throw new ConfigurationError(`${variable} must be whole milliseconds, got ${JSON.stringify(text)}`);
  return validateTimeout(Number(digits), variable);
}

/** A positive whole number (bytes, events); undefined where unset (and where blank, if `blankIsUnset`). */
export function positiveInteger(what: string, blankIsUnset: boolean): (text: string | undefined, variable: string) => number | undefined {
  return (text, variable) => {
    if (text === undefined || (blankIsUnset && !isSet(text))) return undefined;
    const digits = text.trim();
    const value = /^\d+$/.test(digits) ? Number(digits) : Number.NaN;
    if (!Number.isSafeInteger(value) || value < 1) throw new ConfigurationError(`${variable} must be ${what}, got ${JSON.stringify(text)}`);
    return value;
  };
}

/** One of `values` (trimmed), `fallback` where unset (and where blank, if `blankIsUnset`). */
export function oneOf<T extends string>(values: readonly T[], fallback: T, blankIsUnset: boolean): (text: string | undefined, variable: string) => T {
  return (text, variable) => {
    if (text === undefined || (blankIsUnset && text.trim() === '')) return fallback;
    return checkedName(values, text.trim(), variable);
  };
}

/** `value` where it is one of `values`; else refused naming `name` (an option or a variable). */
export function checkedName<T extends string>(values: readonly T[], value: string, name: string): T {
  if (!(values as readonly string[]).includes(value)) throw new ConfigurationError(`${name} must be one of ${values.join(', ')}, got ${JSON.stringify(value)}`);
  return value as T;
}
