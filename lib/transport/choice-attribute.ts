import { ConfigurationError, SettingsDifferError } from '../errors.js';

/**
 * The `choice=` attribute of a rank's PeerEndpoint line (docs/protocol.md 8.3, revision 18): the
 * settings by which the rank chooses its collectives' algorithms, where they are not the defaults,
 * so that the coordinator can tell, before any collective, that two ranks would choose apart.
 * Each setting is `VARIABLE:value`, the value percent-encoded (`encodeURIComponent`: no space,
 * comma or colon is left in it), joined with `,`, in the settings table's order:
 * `choice=GX1_RING_CHANNELS:4,GX1_TOPOLOGY_GROUPS:0%2C1%3B2%2C3`. A rank whose settings are all
 * the defaults writes no attribute.
 */
export const CHOICE_ATTRIBUTE = 'choice=';

/** One setting as a rank publishes it: the variable, and its effective value as text. */
export type ChoiceSetting = readonly [variable: string, value: string];

const VARIABLE = /^[A-Z][A-Z0-9_]*$/;

/** The attribute's value (after `choice=`) for `settings`, or null for none (no attribute). */
export function formatChoiceSettings(settings: readonly ChoiceSetting[]): string | null {
  if (settings.length === 0) return null;
  return settings.map(([variable, value]) => `${variable}:${encodeURIComponent(value)}`).join(',');
}

/**
 * Reads the attribute's value back: its settings, in order. Anything `formatChoiceSettings` would
 * not write (an empty value, a variable twice, a name that is not a variable's, a value that is
 * not its canonical encoding) is refused, naming the attribute.
 */
export function readChoiceSettings(text: string): ChoiceSetting[] {
  const refuse = (why: string) => new ConfigurationError(`choice settings ${JSON.stringify(text)} cannot be read: ${why}`);
  if (text === '') throw refuse('they are empty (a rank with none writes no attribute)');
  const seen = new Set<string>();
  return text.split(',').map((item): ChoiceSetting => {
    const colon = item.indexOf(':');
    const variable = colon < 0 ? item : item.slice(0, colon);
    if (colon < 0 || !VARIABLE.test(variable)) throw refuse(`${JSON.stringify(item)} is not VARIABLE:value`);
    if (seen.has(variable)) throw refuse(`${variable} is given twice`);
    seen.add(variable);
    const encoded = item.slice(colon + 1);
    let value: string;
    try {
      value = decodeURIComponent(encoded);
    } catch {
      throw refuse(`${variable}'s value is not percent-encoded UTF-8`);
    }
    if (encodeURIComponent(value) !== encoded) throw refuse(`${variable}'s value is not written as encodeURIComponent writes it`);
    return [variable, value];
  });
}

/**
 * The error every rank (and the coordinator) fails with where ranks `first` and `second` publish
 * choice settings `ours` and `theirs` (attribute values; undefined: none, the defaults): the first
 * variable whose values differ, with both. `defaults` (the default of every variable, in the
 * settings table's order, where the caller knows them) orders the variables and names a value
 * left out; without it a value left out is `the default`.
 */
export function choiceSettingsDiffer(
  first: number,
  ours: string | undefined,
  second: number,
  theirs: string | undefined,
  defaults: ReadonlyMap<string, string> = new Map(),
): SettingsDifferError {
  const read = (text: string | undefined) => new Map(text === undefined ? [] : readChoiceSettings(text));
  const [mine, yours] = [read(ours), read(theirs)];
  const valueOf = (settings: ReadonlyMap<string, string>, variable: string) => {
    const given = settings.get(variable);
    if (given !== undefined) return given;
    const fallback = defaults.get(variable);
    return fallback === undefined ? 'the default' : `${fallback} (the default)`;
  };
  const variable = [...new Set([...defaults.keys(), ...mine.keys(), ...yours.keys()])].find((name) => valueOf(mine, name) !== valueOf(yours, name));
  // The same settings written in another order: as the coordinator compared them, as text.
  if (variable === undefined) return new SettingsDifferError('the choice settings', [first, second], [ours ?? 'none', theirs ?? 'none']);
  return new SettingsDifferError(variable, [first, second], [valueOf(mine, variable), valueOf(yours, variable)]);
}
