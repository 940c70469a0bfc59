import { ConfigurationError } from '../errors.js';

/** A duration in whole microseconds, or `auto`: the setting decides for itself. */
export type MicrosSetting = number | 'auto';

/** The most a busy-poll window may be (`GX1_BUSY_POLL_US`, `GX1_COORDINATOR_BUSY_POLL_US`): polling is for answers that come within a round trip. */
export const MAX_BUSY_POLL_MICROS = 100_000;

/** The longest spin `spinMicros` / `GX1_SPIN_US` may ask for (native/spin_budget.h). */
export const MAX_SPIN_MICROS = 100_000;

/** The longest a small collective may hold the event loop (`inlineMicros` / `GX1_INLINE_US`): its timers wait that long. */
export const MAX_INLINE_MICROS = 100_000;

/** The option where given (checked, naming it), else `variable`'s value as the settings read it (read only without the option). */
export function resolveMicros(option: MicrosSetting | undefined, optionName: string, variable: { readonly value: MicrosSetting }, max: number): MicrosSetting {
  return option !== undefined ? validMicros(option, optionName, max) : variable.value;
}

/**
 * The settings table's parser of a microseconds variable (`GX1_BUSY_POLL_US`, `GX1_SPIN_US`, ...):
 * `auto` when unset or empty; anything but `auto` or whole microseconds 0..`max` is refused,
 * naming the variable and what it got.
 */
export function microsVariable(max: number): (text: string | undefined, variable: string) => MicrosSetting {
  return (given, variable) => {
    const text = given?.trim();
    if (text === undefined || text === '' || text.toLowerCase() === 'auto') return 'auto';
    return validMicros(/^\d+$/.test(text) ? Number(text) : NaN, variable, max, text);
  };
}

function validMicros(value: MicrosSetting, name: string, max: number, text = String(value)): MicrosSetting {
  if (value === 'auto') return value;
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new ConfigurationError(`${name} must be auto or whole microseconds 0..${max}, got ${JSON.stringify(text)}`);
  }
  return value;
}
