import { ConfigurationError } from '../errors.js';

/**
 * Whether a job survives losing a rank: `faultTolerant` (a session's or the coordinator's option)
 * wins over `GX1_FAULT_TOLERANT` (`1`/`true` or `0`/`false`), default false. Set it for the whole
 * job, coordinator included (`rxccl launch --keep-going` does). In such a job a rank that dies, closes
 * or lets its heartbeat lease run out is reported to the others (docs/protocol.md 13.7) instead of
 * ending the job: the communicators it belonged to fail with `RankLostError`, and `shrink()` goes
 * on without it.
 */
export function resolveFaultTolerance(option: boolean | undefined, variable?: string): boolean {
  return resolveSwitch('faultTolerant', option, 'GX1_FAULT_TOLERANT', variable);
}

/**
 * A yes/no setting: the option `optionName` where given (true or false), else the variable
 * `name` (`1`/`true` or `0`/`false`, any case), unset or empty false.
 */
function resolveSwitch(optionName: string, option: boolean | undefined, name: string, variable: string | undefined): boolean {
  if (option !== undefined) {
    if (typeof option !== 'boolean') throw new ConfigurationError(`${optionName} must be true or false, got ${JSON.stringify(option)}`);
    return option;
  }
  const value = (variable ?? '').trim().toLowerCase();
  if (value === '' || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw new ConfigurationError(`${name} must be 1 or 0 (true or false), got ${JSON.stringify(variable)}`);
}

/**
 * Whether this process joins a running fault-tolerant job (`join`, else `GX1_JOIN`: `1`/`true` or
 * `0`/`false`; default false). See `SessionOptions.join`.
 */
export function resolveJoin(option: boolean | undefined, variable?: string): boolean {
  return resolveSwitch('join', option, 'GX1_JOIN', variable);
}
