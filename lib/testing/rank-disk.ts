/**
 * A rank's disk in a simulated job: what its program keeps across a restart of the job (a
 * checkpoint), as files outlive a process. Values are stored and read as copies
 * (`structuredClone`), as bytes on a disk are: a program cannot change what it wrote by mutating
 * its own array afterwards. Each write is durable at once and alone: two writes are two moments,
 * and a crash between them (a fault point there) leaves only the first, as on a real disk.
 */
export interface RankDisk {
  /** The value last written under `key` (a copy), or undefined. */
  read<T = unknown>(key: string): T | undefined;
  write(key: string, value: unknown): void;
  remove(key: string): void;
  /** The keys written and not removed, in the order first written. */
  keys(): string[];
}

/**
 * The disk of one rank's process: `store` outlives the process; once `alive()` is false the
 * process is gone, and what it would still write never reaches the disk.
 */
export function rankDisk(store: Map<string, unknown>, alive: () => boolean): RankDisk {
  return {
    read: <T>(key: string) => (store.has(key) ? (structuredClone(store.get(key)) as T) : undefined),
    write: (key, value) => {
      if (alive()) store.set(key, structuredClone(value));
    },
    remove: (key) => {
      if (alive()) store.delete(key);
    },
    keys: () => [...store.keys()],
  };
}
