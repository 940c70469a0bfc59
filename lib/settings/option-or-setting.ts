import { readSetting } from '../errors.js';

/**
 * "Option, else setting", for an option that stands in for a `GX1_*` variable (`rails`,
 * `faultTolerant`, `join`): the option where the program gave one, checked by `check` (a refusal
 * names the option `name`), else the variable's value as the settings read it, its default where
 * unset. The variable is read, and a bad value refused, only without the option.
 */
export function optionOrSetting<T>(name: string, option: T | undefined, check: (option: T) => T, setting: { readonly value: T }): T {
  return option !== undefined ? readSetting(name, () => check(option)) : setting.value;
}
