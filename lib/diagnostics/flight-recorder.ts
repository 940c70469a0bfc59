import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One recorded event with the wall-clock time it was seen (ms since the epoch, comparable across ranks). */
export interface RecordedEvent<E> {
  readonly atMs: number;
  readonly event: E;
}

/**
 * The last `capacity` events, kept in memory at the cost of one slot each (the role of torch's
 * flight recorder): when a job hangs or fails, what each rank did last is what tells why.
 */
export class FlightRecorder<E> {
  private readonly slots: (RecordedEvent<E> | undefined)[];
  private next = 0;
  private total = 0;

  constructor(
    readonly capacity: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`flight recorder capacity must be a positive integer, got ${capacity}`);
    this.slots = new Array<RecordedEvent<E> | undefined>(capacity);
  }

  record(event: E): void {
    this.slots[this.next] = { atMs: this.now(), event };
    this.next = (this.next + 1) % this.capacity;
    this.total += 1;
  }

  /** How many events were recorded in all (older ones than the last `capacity` are gone). */
  get recorded(): number {
    return this.total;
  }

  /** The kept events, oldest first. */
  entries(): RecordedEvent<E>[] {
    const ordered = [...this.slots.slice(this.next), ...this.slots.slice(0, this.next)];
    return ordered.filter((entry): entry is RecordedEvent<E> => entry !== undefined);
  }
}

/**
 * Writes `record` as pretty JSON to `directory/name` (creating the directory) and returns the
 * path. Synchronous: it runs on failures, when the process may be about to end. BigInts become
 * decimal strings and errors `{ name, code, message }`.
 */
export function writeJsonRecord(directory: string, name: string, record: unknown): string {
  mkdirSync(directory, { recursive: true });
  const path = join(directory, name);
  writeFileSync(path, `${JSON.stringify(record, jsonValue, 2)}\n`);
  return path;
}

function jsonValue(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return { name: value.name, ...('code' in value ? { code: value.code } : {}), message: value.message };
  return value;
}
