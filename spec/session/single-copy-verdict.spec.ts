/**
 * The single-copy and shared-memory verdicts `rxccl doctor` gives, over facts this machine may not
 * have (Yama's scope 2, a seccomp filter, an old kernel, another platform), and the Linux settings
 * it reads, from files of each form.
 */
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kernelVersion, seccompMode, sharedMemoryFilesystem, transparentHugePages, yamaPtraceScope } from '../../lib/diagnostics/linux-settings.js';
import { type SharedMemoryFacts, sharedMemoryVerdict } from '../../lib/session/shared-memory-verdict.js';
import { type SingleCopyFacts, singleCopyVerdict, type SingleCopyVerdict } from '../../lib/session/single-copy-verdict.js';

/** Each case judged by `judge` over `open` with the case's facts: allowed as the case says, for a reason matching its pattern. */
function judges<F>(judge: (facts: F) => SingleCopyVerdict, open: F, cases: [string, Partial<F>, boolean | null, RegExp][]): void {
  it.each(cases)('%s', (_, facts, allowed, reason) => {
    const verdict = judge({ ...open, ...facts });
    expect(verdict.allowed).toBe(allowed);
    expect(verdict.reason).toMatch(reason);
  });
}

const OPEN: SingleCopyFacts = { platform: 'linux', dataPlaneAbsent: null, setting: 'auto', yamaPtraceScope: null, seccomp: 0, refusal: '' };

describe('singleCopyVerdict', () => {
  judges(singleCopyVerdict, OPEN, [
    ['nothing in the way', {}, true, /^ranks of this host read large payloads \(256 KiB and up\) from each other's memory$/],
    ["Yama's scope 1, which each rank opens to its user", { yamaPtraceScope: 1 }, true, /ptrace_scope 1 each rank lets its user's processes read it/],
    ['another platform', { platform: 'darwin' }, false, /^single copy is Linux's \(process_vm_readv\); this is darwin$/],
    ['no native data plane', { dataPlaneAbsent: 'GX1_DATA_PLANE=js' }, false, /native data plane, which would not run: GX1_DATA_PLANE=js$/],
    ['GX1_SINGLE_COPY=off', { setting: 'off' }, false, /^GX1_SINGLE_COPY=off/],
    ["Yama's scope 2", { yamaPtraceScope: 2 }, false, /^Yama's ptrace_scope is 2: no process may read a sibling's memory$/],
    ["Yama's scope 3, whatever else", { yamaPtraceScope: 3, refusal: null, seccomp: 2 }, false, /ptrace_scope is 3/],
    ['a seccomp filter that refuses the call', { seccomp: 2, refusal: 'process_vm_readv: Operation not permitted' }, false, /^process_vm_readv: Operation not permitted \(a seccomp filter is in place\)$/],
    ['a seccomp filter that allows it', { seccomp: 2, refusal: '' }, true, /^ranks of this host/],
    ['a seccomp filter, and an addon too old to try', { seccomp: 2, refusal: null }, null, /^seccomp mode 2: it may refuse process_vm_readv, and this addon is too old to try it/],
    ['no filter, and an addon too old to try', { seccomp: 0, refusal: null }, true, /^ranks of this host/],
  ]);
});

describe('Linux settings', () => {
  it('reads Yama, seccomp and transparent huge pages as the kernel writes them, null where absent or unreadable', () => {
    const directory = mkdtempSync(join(tmpdir(), 'rxccl-settings-'));
    try {
      const file = (name: string, text: string) => {
        writeFileSync(join(directory, name), text);
        return join(directory, name);
      };
      expect(yamaPtraceScope(file('scope', '1\n'))).toBe(1);
      expect(yamaPtraceScope(file('garbled', 'one\n'))).toBeNull();
      expect(seccompMode(file('status', 'Name:\tnode\nSeccomp:\t2\nSeccomp_filters:\t1\n'))).toBe(2);
      expect(seccompMode(file('old-status', 'Name:\tnode\n'))).toBeNull();
      expect(transparentHugePages(file('thp', 'always [madvise] never\n'))).toBe('madvise');
      for (const read of [yamaPtraceScope, seccompMode, transparentHugePages]) expect(read(join(directory, 'absent'))).toBeNull();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

const SHARED_OPEN: SharedMemoryFacts = { platform: 'linux', dataPlaneAbsent: null, setting: 'auto', yamaPtraceScope: null, seccomp: 0, refusal: '', kernel: '6.8.0-45-generic', devShm: null };

describe('sharedMemoryVerdict', () => {
  judges(sharedMemoryVerdict, SHARED_OPEN, [
    ['nothing in the way, and no /dev/shm (it is not needed)', {}, true, /^links between ranks of this host move every message through a ring the two share \(a memfd, named in no filesystem: \/dev\/shm is not needed\)$/],
    ['Linux 5.6 exactly', { kernel: '5.6.0' }, true, /^links between ranks/],
    ['another platform', { platform: 'darwin' }, false, /^shared-memory rings are Linux's \(memfd_create, pidfd_getfd\); this is darwin$/],
    ['no native data plane', { dataPlaneAbsent: 'TLS is set' }, false, /^shared-memory rings are part of the native data plane, which would not run: TLS is set$/],
    ['GX1_SHARED_MEMORY=off', { setting: 'off' }, false, /^GX1_SHARED_MEMORY=off: every link keeps TCP$/],
    ['a kernel before pidfd_getfd', { kernel: '5.4.0-150-generic' }, false, /^pidfd_getfd, which takes a peer's ring, came with Linux 5\.6; this kernel is 5\.4\.0-150-generic: every link keeps TCP$/],
    ['Linux 4', { kernel: '4.19.0' }, false, /came with Linux 5\.6; this kernel is 4\.19\.0/],
    ["Yama's scope 2: no sender can be verified", { yamaPtraceScope: 2 }, false, /^a ring's sender is verified as single copy verifies it, which here cannot be: Yama's ptrace_scope is 2/],
    ['a filter refusing the verification', { seccomp: 2, refusal: 'pidfd_open: Operation not permitted' }, false, /which here cannot be: pidfd_open: Operation not permitted \(a seccomp filter is in place\)$/],
    ['a filter, and an addon too old to try', { seccomp: 2, refusal: null }, null, /which here cannot be: seccomp mode 2/],
    ['a filter that lets the verification through', { seccomp: 2 }, true, /a seccomp filter is in place, which may still refuse memfd_create or pidfd_getfd \(a link then keeps TCP, and GX1_DEBUG says why\)$/],
    // GX1_SINGLE_COPY=off keeps the verification, which the ring needs: not among these facts.
  ]);
});

describe('the kernel release and /dev/shm', () => {
  it('reads a release\'s major and minor version, null where it does not start with them', () => {
    expect(kernelVersion('6.18.44-fc-v1272')).toEqual([6, 18]);
    expect(kernelVersion('5.6.0')).toEqual([5, 6]);
    expect(kernelVersion('unknown')).toBeNull();
  });

  it('reports a tmpfs as statfs says, writable where this process may write, null where absent', () => {
    const directory = mkdtempSync(join(tmpdir(), 'rxccl-shm-'));
    try {
      const stats = statfsSync(directory);
      expect(sharedMemoryFilesystem(directory)).toEqual({ path: directory, writable: true, bytes: stats.blocks * stats.bsize, freeBytes: expect.any(Number) });
      expect(sharedMemoryFilesystem(join(directory, 'absent'))).toBeNull();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
