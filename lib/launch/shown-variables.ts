/** What stands for a secret's value where variables are shown. */
export const MASKED = '***';

/**
 * The rxccl variables of `env` (`GX1_*`, `RXCCL_*`) by name, as `rxccl doctor` shows them: a
 * secret's value (a name with SECRET in it, `GX1_SECRET`) masked, a secret file's path
 * (`GX1_SECRET_FILE`) shown, since it gives nothing away without the file.
 */
export function shownVariables(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const names = Object.keys(env)
    .filter((name) => /^(GX1|RXCCL)_/.test(name) && env[name] !== undefined)
    .sort();
  return Object.fromEntries(names.map((name) => [name, /SECRET/.test(name) && !name.endsWith('_FILE') ? MASKED : env[name]!]));
}
