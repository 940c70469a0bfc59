import { didYouMean } from '../diagnostics/did-you-mean.js';
import { VARIABLES } from '../settings/settings-table.js';

/**
 * Every `GX1_*` variable rxccl reads: the settings table's (spec/launch/known-variables.spec.ts
 * checks it against the names the sources read), so that a misspelt one is named instead of
 * silently ignored.
 */
export const KNOWN_VARIABLES: readonly string[] = VARIABLES.map(({ variable }) => variable).sort();

/**
 * The `GX1_*` variables of `env` that rxccl does not read, each with the known one it most likely
 * means: a typo (`GX1_RIGN_ORDER`), or a shortened name whose words all belong to one known name
 * (`GX1_TRANSPORT` -> `GX1_COLLECTIVE_TRANSPORT`); null when nothing fits.
 */
export function unknownVariables(env: Readonly<Record<string, string | undefined>>): { name: string; meant: string | null }[] {
  return Object.keys(env)
    .filter((name) => name.startsWith('GX1_') && !KNOWN_VARIABLES.includes(name))
    .sort()
    .map((name) => ({ name, meant: didYouMean(name, KNOWN_VARIABLES) ?? sharingWords(name) }));
}

/** The one known name that has every word of `name` (words split at `_`), if exactly one has. */
function sharingWords(name: string): string | null {
  const words = name.split('_').slice(1);
  const fits = KNOWN_VARIABLES.filter((known) => words.every((word) => known.split('_').includes(word)));
  return fits.length === 1 ? fits[0]! : null;
}

let warned = false;

/**
 * Warns once per process (`RXCCL_UNKNOWN_VARIABLE`) about `GX1_*` variables rxccl does not read,
 * which would otherwise be silently ignored.
 */
export function warnUnknownVariables(env: Readonly<Record<string, string | undefined>>): void {
  if (warned) return;
  const unknown = unknownVariables(env);
  if (unknown.length === 0) return;
  warned = true;
  const named = unknown.map(({ name, meant }) => (meant === null ? name : `${name} (did you mean ${meant}?)`));
  process.emitWarning(`rxccl ignores ${named.join(', ')}: no such setting (the GX1_* variables: README.md)`, { code: 'RXCCL_UNKNOWN_VARIABLE' });
}
