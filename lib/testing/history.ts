/**
 * The history of a simulated job, as Jepsen records one: each operation a program wraps in
 * `rank.operation(f, input, run)` is an `invoke` event when it starts and an `ok` event (with its
 * output) when it returns, in one order over every rank. An operation whose outcome is unknown
 * (it threw, or its rank was killed, restarted or stuck before it returned) ends in `info`: it
 * may or may not have taken effect, and a checker must allow both (a timeout does not say).
 */
export interface HistoryEvent {
  /** Position in the history: the order of events over every rank. */
  readonly index: number;
  /** Which operation: its invoke and its completion share the number. */
  readonly operation: number;
  readonly type: 'invoke' | 'ok' | 'info';
  readonly rank: number;
  /** The generation of the job the rank was in (0 unless the job restarted). */
  readonly generation: number;
  readonly f: string;
  /** invoke: the input; ok: the output (copies where `structuredClone` can copy them); info: undefined. */
  readonly value: unknown;
  /** Virtual ms. */
  readonly timeMs: number;
  /**
   * info: why the outcome is unknown: `threw TIMEOUT: ...`, `killed`, `restarted`, `stuck`, or
   * `returned first` / `threw first` (the program ended with the operation still running).
   */
  readonly note?: string;
}

/** Writes a job's history as its ranks run. */
export class HistoryRecorder {
  readonly events: HistoryEvent[] = [];
  private readonly open = new Map<number, HistoryEvent>();
  private operations = 0;

  constructor(private readonly now: () => number) {}

  /**
   * Runs `run` as operation `f(input)` of `rank`; `alive()` false means the rank's process is
   * gone (its operations were already ended as info), so nothing more is written for it.
   */
  async record<T>(rank: number, generation: number, f: string, input: unknown, run: () => Promise<T>, alive: () => boolean): Promise<T> {
    const invoke = this.push({ operation: this.operations++, type: 'invoke', rank, generation, f, value: input });
    this.open.set(invoke.operation, invoke);
    let output: T;
    try {
      output = await run();
    } catch (error) {
      if (alive()) this.close(invoke, 'info', undefined, `threw ${describeError(error)}`);
      throw error;
    }
    if (alive()) this.close(invoke, 'ok', output);
    return output;
  }

  /** Ends the open operations of `rank` (every rank where null) in `generation` as info, for `note`. */
  end(rank: number | null, generation: number, note: string): void {
    for (const invoke of [...this.open.values()]) {
      if ((rank === null || invoke.rank === rank) && invoke.generation === generation) this.close(invoke, 'info', undefined, note);
    }
  }

  private close(invoke: HistoryEvent, type: 'ok' | 'info', value: unknown, note?: string): void {
    if (!this.open.delete(invoke.operation)) return;
    const { operation, rank, generation, f } = invoke;
    this.push({ operation, type, rank, generation, f, value, ...(note === undefined ? {} : { note }) });
  }

  private push(event: Omit<HistoryEvent, 'index' | 'timeMs'>): HistoryEvent {
    // A copy: a program that later changes the array it wrote must not change its history.
    const recorded = { index: this.events.length, ...event, value: copied(event.value), timeMs: this.now() };
    this.events.push(recorded);
    return recorded;
  }
}

function copied(value: unknown): unknown {
  try {
    return structuredClone(value);
  } catch {
    return value; // a function, say: kept as it is
  }
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return `${typeof code === 'string' ? code : error.name}: ${error.message}`;
}
