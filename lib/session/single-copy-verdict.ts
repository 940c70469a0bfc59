import type { SingleCopySetting } from '../settings/plane-settings.js';

/** Everything that decides whether this host's ranks may use single copy (`rxccl doctor`). */
export interface SingleCopyFacts {
  readonly platform: NodeJS.Platform;
  /** Why the job's ranks here would not run the native data plane, which single copy is part of; null where they would. */
  readonly dataPlaneAbsent: string | null;
  /** `GX1_SINGLE_COPY`, resolved. */
  readonly setting: SingleCopySetting;
  /** Yama's ptrace scope, null without Yama. */
  readonly yamaPtraceScope: number | null;
  /** This process's seccomp mode, null where not reported. */
  readonly seccomp: number | null;
  /** The addon's `singleCopyRefusal()`: '' allowed, else why not; null where the addon is too old to say. */
  readonly refusal: string | null;
}

/** Whether single copy is allowed (null: nothing here can tell), and why in one sentence. */
export interface SingleCopyVerdict {
  readonly allowed: boolean | null;
  readonly reason: string;
}

/**
 * Judges the facts in the order a job meets them: the platform, the plane, the setting, Yama (which
 * judges reading a sibling), then the calls themselves (which a seccomp filter judges), as the
 * addon tried them; where it cannot try, a seccomp filter leaves the answer open.
 */
export function singleCopyVerdict(facts: SingleCopyFacts): SingleCopyVerdict {
  if (facts.platform !== 'linux') return { allowed: false, reason: `single copy is Linux's (process_vm_readv); this is ${facts.platform}` };
  if (facts.dataPlaneAbsent !== null) return { allowed: false, reason: `single copy is part of the native data plane, which would not run: ${facts.dataPlaneAbsent}` };
  if (facts.setting === 'off') return { allowed: false, reason: 'GX1_SINGLE_COPY=off: every payload travels the links' };
  const scope = facts.yamaPtraceScope;
  if (scope !== null && scope >= 2) return { allowed: false, reason: `Yama's ptrace_scope is ${scope}: no process may read a sibling's memory` };
  const filtered = facts.seccomp === 2 ? ' (a seccomp filter is in place)' : '';
  if (facts.refusal !== null && facts.refusal !== '') return { allowed: false, reason: `${facts.refusal}${filtered}` };
  if (facts.refusal === null && facts.seccomp !== null && facts.seccomp !== 0) {
    return { allowed: null, reason: `seccomp mode ${facts.seccomp}: it may refuse process_vm_readv, and this addon is too old to try it (rebuild it)` };
  }
  const yama = scope === 1 ? "; under Yama's ptrace_scope 1 each rank lets its user's processes read it while its plane is open" : '';
  return { allowed: true, reason: `ranks of this host read large payloads (256 KiB and up) from each other's memory${yama}` };
}
