/** The message `run` throws, or 'accepted' where it returns: for tests of what a parser refuses and with which text. */
export function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  return 'accepted';
}
