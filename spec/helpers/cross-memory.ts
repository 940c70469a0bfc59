/**
 * Whether this system lets processes read memory with process_vm_readv (Linux cross memory attach),
 * which single copy between ranks of one host needs (native/single_copy.h). Asked of the system
 * itself, not of rxccl: a seccomp filter (some containers) forbids the call, and Yama's ptrace scope
 * 2 or 3 forbids reading another process. Where it is forbidden, ranks correctly keep their
 * payloads on the links, and the tests that expect single copy skip, saying why.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

// Python's ctypes calls process_vm_readv on its own memory: the syscall filter answers, Yama does not.
const SELF_READ = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
source, target = ctypes.c_uint64(0x5eed), ctypes.c_uint64(0)
local = iovec(ctypes.cast(ctypes.byref(target), ctypes.c_void_p), 8)
remote = iovec(ctypes.cast(ctypes.byref(source), ctypes.c_void_p), 8)
read = libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print('ok' if read == 8 and target.value == 0x5eed else 'refused: ' + os.strerror(ctypes.get_errno()))
`;

/** Whether a process may read its own memory with process_vm_readv here; else why not. */
export function selfReads(): { readonly allowed: boolean; readonly reason: string } {
  if (process.platform !== 'linux') return { allowed: false, reason: `process_vm_readv is Linux's (this is ${process.platform})` };
  const probe = spawnSync('python3', ['-c', SELF_READ], { encoding: 'utf8', timeout: 10_000 });
  // No python3 to ask: assume the default, which allows it.
  if (probe.error !== undefined) return { allowed: true, reason: '' };
  const answer = probe.stdout.trim();
  return answer === 'ok' ? { allowed: true, reason: '' } : { allowed: false, reason: `process_vm_readv is refused here (${answer || probe.stderr.trim()})` };
}

/** Whether a process may read a sibling's memory (what ranks of one host do); else why not. */
export function siblingReads(): { readonly allowed: boolean; readonly reason: string } {
  const self = selfReads();
  if (!self.allowed) return self;
  const scope = existsSync('/proc/sys/kernel/yama/ptrace_scope') ? Number(readFileSync('/proc/sys/kernel/yama/ptrace_scope', 'utf8')) : 0;
  // Scope 1 is what a rank's PR_SET_PTRACER_ANY opens; 2 and 3 forbid it whatever a process allows.
  return scope < 2 ? self : { allowed: false, reason: `Yama's ptrace_scope is ${scope} here: no process may read a sibling's memory` };
}
