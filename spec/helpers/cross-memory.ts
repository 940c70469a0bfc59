/**
 * Whether this system lets processes read memory with process_vm_readv (Linux cross memory attach),
 * which single copy between ranks of one host needs (native/single_copy.h). Asked of the system
 * itself, not of rxccl: a seccomp filter (some containers) forbids the call, and Yama's ptrace scope
 * 2 or 3 forbids reading another process. Where it is forbidden, ranks correctly keep their
 * payloads on the links, and the tests that expect single copy skip, saying why. Also what the tests
 * of a forged offer need: reading a process's memory, and a process to name (a victim).
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

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

/** Reads `bytes` bytes at `address` of process `pid` (process_vm_readv through python3's ctypes); null where refused or without python3. */
export function readProcessMemory(pid: number, address: bigint, bytes: number): Uint8Array | null {
  const script = `
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
size = ${bytes}
target = ctypes.create_string_buffer(size)
local = iovec(ctypes.cast(target, ctypes.c_void_p), size)
remote = iovec(ctypes.c_void_p(${address}), size)
read = libc.process_vm_readv(${pid}, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print(target.raw.hex() if read == size else '')
`;
  const read = spawnSync('python3', ['-c', script], { encoding: 'utf8', timeout: 10_000 });
  const hex = read.error === undefined ? read.stdout.trim() : '';
  return hex === '' ? null : Uint8Array.from(Buffer.from(hex, 'hex'));
}

/** A process of this user that a forged single-copy offer names: where it holds a secret, and a buffer it fills on request. */
export interface MemoryVictim {
  readonly pid: number;
  /** The address of its copy of the secret it was given. */
  readonly secret: bigint;
  /** The address of a 16-byte buffer `hold` fills. */
  readonly probe: bigint;
  /** Writes `bytes` (16) into the probe buffer, resolving once they are there. */
  hold(bytes: Uint8Array): Promise<void>;
  kill(): void;
}

// Holds the secret (its hex the first argument) and a 16-byte probe buffer, says where, then fills
// the probe with each hex line it reads, answering "held". It lets any process of its user read it
// (prctl PR_SET_PTRACER_ANY, as an offering rank does where Yama's scope is 1), so that only the
// checks of the offer, not Yama, keep a rank from reading it.
const VICTIM = `
import ctypes, os, sys
ctypes.CDLL(None).prctl(0x59616d61, ctypes.c_ulong(-1), 0, 0, 0)
secret = ctypes.create_string_buffer(bytes.fromhex(sys.argv[1]))
probe = ctypes.create_string_buffer(16)
print(os.getpid(), ctypes.addressof(secret), ctypes.addressof(probe), flush=True)
for line in sys.stdin:
    ctypes.memmove(probe, bytes.fromhex(line.strip()), 16)
    print('held', flush=True)
`;

/** Starts a MemoryVictim (python3) holding `secret`; null without python3. */
export async function memoryVictim(secret: Uint8Array): Promise<MemoryVictim | null> {
  const child = spawn('python3', ['-c', VICTIM, Buffer.from(secret).toString('hex')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const started = await Promise.race([lines.next(), once(child, 'error').then(() => null)]);
  if (started === null || started.done === true) return null;
  const [pid, secretAt, probeAt] = started.value.split(' ');
  return {
    pid: Number(pid),
    secret: BigInt(secretAt!),
    probe: BigInt(probeAt!),
    async hold(bytes) {
      child.stdin.write(`${Buffer.from(bytes).toString('hex')}\n`);
      await lines.next();
    },
    kill: () => child.kill(),
  };
}
