/** A command line the user got wrong: reported in one line, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
