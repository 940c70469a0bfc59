import { accessSync, constants, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

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
 * `mkdir -p DIRECTORY`, then checks that it is a directory this process may write in; throws the
 * OS's error otherwise (`EEXIST` for a file in its place, `ENOTDIR`, `EACCES`, `ENOENT` under
 * /proc). Not `mkdirSync(directory, { recursive: true })`: where mkdir says ENOENT although the
 * parent exists (`/proc/x`), Node 20's recursive mkdir makes the parent again and retries forever.
 */
export function prepareRecordDirectory(directory: string): void {
  makeDirectory(directory);
  accessSync(directory, constants.W_OK | constants.X_OK);
}

function makeDirectory(path: string): void {
  let failure = mkdirOnce(path);
  if (failure?.code === 'ENOENT' && dirname(path) !== path) {
    makeDirectory(dirname(path));
    // Once more, and only once: a directory whose parent now exists and still says ENOENT never will.
    failure = mkdirOnce(path);
  }
  if (failure !== null) throw failure;
}

/** mkdir, taking a directory already there (another rank may have just made it) as made. */
function mkdirOnce(path: string): NodeJS.ErrnoException | null {
  try {
    mkdirSync(path);
    return null;
  } catch (error) {
    const failure = error as NodeJS.ErrnoException;
    return failure.code === 'EEXIST' && statSync(path).isDirectory() ? null : failure;
  }
}

/**
 * Writes `record` as pretty JSON to `directory/name` (the directory made by
 * `prepareRecordDirectory`) and returns the path. Synchronous: it runs on failures, when the
 * process may be about to end. BigInts become decimal strings and errors `{ name, code, message }`.
 */
export function writeJsonRecord(directory: string, name: string, record: unknown): string {
  const path = join(directory, name);
  writeFileSync(path, `${JSON.stringify(record, jsonValue, 2)}\n`);
  return path;
}

function jsonValue(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return { name: value.name, ...('code' in value ? { code: value.code } : {}), message: value.message };
  return value;
}
