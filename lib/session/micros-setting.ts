import { ConfigurationError } from '../errors.js';

/** A duration in whole microseconds, or `auto`: the setting decides for itself. */
export type MicrosSetting = number | 'auto';

/**
 * A microseconds setting from its option, else its variable, else `auto`; anything but `auto` or
 * whole microseconds 0..`max` is refused, naming the option or the variable and what it got.
 */
export function resolveMicros(
  option: MicrosSetting | undefined,
  optionName: string,
  env: Readonly<Record<string, string | undefined>>,
  variable: string,
  max: number,
): MicrosSetting {
  if (option !== undefined) return validMicros(option, optionName, max);
  return microsVariable(env, variable, max);
}

/** A microseconds variable (`GX1_BUSY_POLL_US`, `GX1_SPIN_US`, ...): `auto` when unset or empty. */
export function microsVariable(env: Readonly<Record<string, string | undefined>>, name: string, max: number): MicrosSetting {
  const text = env[name]?.trim();
  if (text === undefined || text === '' || text.toLowerCase() === 'auto') return 'auto';
  return validMicros(/^\d+$/.test(text) ? Number(text) : NaN, name, max, text);
}

function validMicros(value: MicrosSetting, name: string, max: number, text = String(value)): MicrosSetting {
  if (value === 'auto') return value;
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new ConfigurationError(`${name} must be auto or whole microseconds 0..${max}, got ${JSON.stringify(text)}`);
  }
  return value;
}
