/**
 * Whom a rank's running collective waits for, where no coordinator sees it: each wait that knows
 * (the JS plane's headers and receives, the native plane's engine) says so while it runs, and
 * the session asks when the collective has waited long, to name them in its waiting warning.
 */
export class WaitingRanks {
  private readonly waits = new Set<() => readonly number[]>();

  /** `missing()` names ranks the running collective waits for, until the returned function is called. */
  add(missing: () => readonly number[]): () => void {
    this.waits.add(missing);
    return () => this.waits.delete(missing);
  }

  /** Every rank some wait names, ascending (none: nothing this rank runs waits for a peer, or nothing says). */
  missing(): number[] {
    const ranks = new Set<number>();
    for (const missing of this.waits) for (const rank of missing()) ranks.add(rank);
    return [...ranks].sort((a, b) => a - b);
  }
}
