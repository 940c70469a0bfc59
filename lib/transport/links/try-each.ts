/** Runs every action, even after one throws; returns how many succeeded (best-effort fan-out). */
export function tryEach(actions: readonly (() => void)[]): number {
  let done = 0;
  for (const action of actions) {
    try {
      action();
      done += 1;
    } catch {
      // That channel is gone; the others carry the message.
    }
  }
  return done;
}
