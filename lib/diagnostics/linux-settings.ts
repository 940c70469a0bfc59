/**
 * The Linux settings that decide what rxccl may do on a host, read where the kernel publishes them
 * (`rxccl doctor`): each is null where the file is absent (another platform, a kernel without the
 * feature) or unreadable. Nothing here changes a setting.
 */
import { readFileSync } from 'node:fs';

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
