/**
 * The Linux settings that decide what rxccl may do on a host, read where the kernel publishes them
 * (`rxccl doctor`): each is null where the file is absent (another platform, a kernel without the
 * feature) or unreadable. Nothing here changes a setting.
 */
import { accessSync, constants, readFileSync, statfsSync } from 'node:fs';

/** The text of `path`, or null where it cannot be read. */
function readSetting(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Yama's ptrace scope (0 classic, 1 restricted to a process's ancestors, 2 admin only, 3 none),
 * which judges one process reading another's memory (single copy between ranks), or null without
 * Yama (no restriction beyond same user).
 */
export function yamaPtraceScope(path = '/proc/sys/kernel/yama/ptrace_scope'): number | null {
  const text = readSetting(path)?.trim();
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : null;
}

/**
 * This process's seccomp mode (/proc/self/status `Seccomp:`): 0 none, 1 strict, 2 a filter (some
 * containers), which may refuse a system call such as process_vm_readv; null where not reported.
 */
export function seccompMode(path = '/proc/self/status'): number | null {
  const match = /^Seccomp:\s*(\d+)\s*$/m.exec(readSetting(path) ?? '');
  return match === null ? null : Number(match[1]);
}

/**
 * Transparent huge pages' mode (`always`, `madvise` or `never`: the bracketed word of
 * /sys/kernel/mm/transparent_hugepage/enabled). Large results ask for huge pages (MADV_HUGEPAGE),
 * which only `always` and `madvise` grant.
 */
export function transparentHugePages(path = '/sys/kernel/mm/transparent_hugepage/enabled'): string | null {
  return /\[(\w+)\]/.exec(readSetting(path) ?? '')?.[1] ?? null;
}

/**
 * A kernel release's major and minor version (`6.8.0-45-generic` is [6, 8]), null where it does
 * not start so: shared-memory rings need pidfd_getfd, Linux 5.6.
 */
export function kernelVersion(release: string): readonly [number, number] | null {
  const match = /^(\d+)\.(\d+)/.exec(release);
  return match === null ? null : [Number(match[1]), Number(match[2])];
}

/** What a tmpfs such as /dev/shm is here: whether this process may write in it, its size and free bytes; null where absent. */
export interface SharedMemoryFilesystem {
  readonly path: string;
  readonly writable: boolean;
  readonly bytes: number;
  readonly freeBytes: number;
}

/** `path` (by default /dev/shm) as `SharedMemoryFilesystem` says, or null where it is not there. */
export function sharedMemoryFilesystem(path = '/dev/shm'): SharedMemoryFilesystem | null {
  try {
    const stats = statfsSync(path);
    let writable = true;
    try {
      accessSync(path, constants.W_OK);
    } catch {
      writable = false;
    }
    return { path, writable, bytes: stats.blocks * stats.bsize, freeBytes: stats.bavail * stats.bsize };
  } catch {
    return null;
  }
}
