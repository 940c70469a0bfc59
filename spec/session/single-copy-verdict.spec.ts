/**
 * The single-copy verdict `rxccl doctor` gives, over facts this machine may not have (Yama's scope
 * 2, a seccomp filter, another platform), and the Linux settings it reads, from files of each form.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { seccompMode, transparentHugePages, yamaPtraceScope } from '../../lib/diagnostics/linux-settings.js';
import { type SingleCopyFacts, singleCopyVerdict } from '../../lib/session/single-copy-verdict.js';

const OPEN: SingleCopyFacts = { platform: 'linux', dataPlaneAbsent: null, setting: 'auto', yamaPtraceScope: null, seccomp: 0, refusal: '' };

describe('singleCopyVerdict', () => {
  it.each<[string, Partial<SingleCopyFacts>, boolean | null, RegExp]>([
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
  ])('%s', (_, facts, allowed, reason) => {
    const verdict = singleCopyVerdict({ ...OPEN, ...facts });
    expect(verdict.allowed).toBe(allowed);
    expect(verdict.reason).toMatch(reason);
  });
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
