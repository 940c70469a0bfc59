import { kernelVersion, type SharedMemoryFilesystem } from '../diagnostics/linux-settings.js';
import type { SharedMemorySetting } from '../settings/plane-settings.js';
import { type SingleCopyFacts, singleCopyVerdict, type SingleCopyVerdict } from './single-copy-verdict.js';

/** Everything that decides whether this host's ranks may share memory rings (`rxccl doctor`). */
export interface SharedMemoryFacts extends Omit<SingleCopyFacts, 'setting'> {
  /** `GX1_SHARED_MEMORY`, resolved. */
  readonly setting: SharedMemorySetting;
  /** The kernel's release (`os.release()`). */
  readonly kernel: string;
  /** /dev/shm, where it is: reported, never needed (the rings are memfds, named in no filesystem). */
  readonly devShm: SharedMemoryFilesystem | null;
}

/** The Linux release pidfd_getfd came with: a receiver takes its sender's ring with it. */
const PIDFD_GETFD_SINCE: readonly [number, number] = [5, 6];

/**
 * Whether ranks of this host may move their messages through shared-memory rings, and why (not),
 * in the order a link meets it: the platform, the plane, the setting, the kernel (pidfd_getfd),
 * then the peer's verification, which is single copy's (pidfd_open, process_vm_readv, Yama's
 * ptrace scope, which also judges pidfd_getfd): single copy's verdict without its setting. Where a
 * seccomp filter is in place, memfd_create and pidfd_getfd, which nothing here tries, may still be
 * refused: the link then keeps TCP, and GX1_DEBUG says why.
 */
export function sharedMemoryVerdict(facts: SharedMemoryFacts): SingleCopyVerdict {
  if (facts.platform !== 'linux') return { allowed: false, reason: `shared-memory rings are Linux's (memfd_create, pidfd_getfd); this is ${facts.platform}` };
  if (facts.dataPlaneAbsent !== null) return { allowed: false, reason: `shared-memory rings are part of the native data plane, which would not run: ${facts.dataPlaneAbsent}` };
  if (facts.setting === 'off') return { allowed: false, reason: 'GX1_SHARED_MEMORY=off: every link keeps TCP' };
  const version = kernelVersion(facts.kernel);
  if (version !== null && (version[0] < PIDFD_GETFD_SINCE[0] || (version[0] === PIDFD_GETFD_SINCE[0] && version[1] < PIDFD_GETFD_SINCE[1]))) {
    return { allowed: false, reason: `pidfd_getfd, which takes a peer's ring, came with Linux 5.6; this kernel is ${facts.kernel}: every link keeps TCP` };
  }
  const verification = singleCopyVerdict({ ...facts, setting: 'auto' });
  if (verification.allowed !== true) return { allowed: verification.allowed, reason: `a ring's sender is verified as single copy verifies it, which here cannot be: ${verification.reason}` };
  const filtered = facts.seccomp === 2 ? '; a seccomp filter is in place, which may still refuse memfd_create or pidfd_getfd (a link then keeps TCP, and GX1_DEBUG says why)' : '';
  return { allowed: true, reason: `links between ranks of this host move every message through a ring the two share (a memfd, named in no filesystem: /dev/shm is not needed)${filtered}` };
}
