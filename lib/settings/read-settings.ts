import { ConfigurationError, readSetting } from '../errors.js';
import { type VariableName, type VariableValue, VARIABLES } from './settings-table.js';

/** The variables of a process (`process.env`), or of a job a test or a launcher describes. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** One variable as read: its text, where it came from, and its value by the table's parser. */
export interface Setting<T> {
  readonly variable: VariableName;
  /** As set; undefined where unset. */
  readonly text: string | undefined;
  /** `environment` where set to more than blanks, else `default`. */
  readonly source: 'environment' | 'default';
  /**
   * The value by the table's parser (its default where unset). A bad value throws here, the
   * ConfigurationError naming the variable, and only here: a variable an option stands in for is
   * refused only where the option is absent, as it always was.
   */
  readonly value: T;
}

/** Every `GX1_*` variable of the settings table, read once, frozen (values too). */
export type Settings = { readonly [V in VariableName]: Setting<VariableValue<V>> };

const SETTINGS_MARK = Symbol('rxccl settings');

/**
 * Reads every variable of the settings table from `env` once, each by its parser, into a deeply
 * frozen object: what the coordinator, the session, the launchers and the CLI receive instead of
 * the environment. Reading never throws; a bad value's refusal waits in its `value`.
 */
export function readSettings(env: Environment): Settings {
  const settings = Object.fromEntries(
    VARIABLES.map(({ variable, spec }) => {
      const text = env[variable];
      let parsed: { readonly value: unknown } | { readonly refusal: ConfigurationError };
      try {
        parsed = { value: deepFreeze(readSetting(variable, () => spec.parse(text, variable))) };
      } catch (error) {
        if (!(error instanceof ConfigurationError)) throw error;
        parsed = { refusal: error };
      }
      const setting = {
        variable,
        text,
        source: text !== undefined && text.trim() !== '' ? 'environment' : 'default',
        get value() {
          if ('refusal' in parsed) throw parsed.refusal;
          return parsed.value;
        },
      };
      return [variable, Object.freeze(setting)];
    }),
  );
  return Object.freeze(Object.defineProperty(settings, SETTINGS_MARK, { value: true })) as unknown as Settings;
}

let ofProcess: Settings | undefined;

/** This process's settings: `process.env` read on first use, then the same object for the life of the process. */
export function processSettings(): Settings {
  ofProcess ??= readSettings(process.env);
  return ofProcess;
}

/**
 * Settings from what an entry point was given: settings as they are; `process.env` as this
 * process's (read once); any other environment (a test's, a child's) read now. Public entry points
 * that take an environment (`Coordinator.listen(options, env)`) turn it into settings here.
 */
export function settingsOf(source: Settings | Environment = process.env): Settings {
  if (Object.hasOwn(source, SETTINGS_MARK)) return source as Settings;
  return source === process.env ? processSettings() : readSettings(source as Environment);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/** A variable's effective value, and where it came from (`rxccl doctor`'s table). */
export interface EffectiveSetting {
  readonly variable: string;
  /** As set (trimmed; secrets masked by the caller), or null where the default applies. */
  readonly value: string | null;
  readonly source: 'environment' | 'default';
  /** The options of its row, which win over it where a program gives them. */
  readonly options: readonly string[];
}

/** Every variable of the table with its value as set (set and not blank) or null where its default applies. */
export function effectiveSettings(settings: Settings): EffectiveSetting[] {
  return VARIABLES.map(({ variable, row }) => {
    const { text, source } = settings[variable];
    return { variable, value: source === 'environment' ? text!.trim() : null, source, options: row.options };
  });
}
