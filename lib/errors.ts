/**
 * Each kind, when it occurs and what to do: docs/errors.md.
 *
 * Every error rxccl raises is an `RxcclError` with a stable `code`, so callers can branch on
 * `error.code` without parsing messages. Messages name the rank, sequence, tag or rail involved,
 * following the reference implementation's wording (`missing ranks [1]`, `direct peer rank 1 left`).
 */
export type RxcclErrorCode =
  | 'PROTOCOL'
  | 'INVALID_CONFIGURATION'
  | 'WRONG_SESSION'
  | 'WRONG_DESTINATION'
  | 'REMOTE_ABORT'
  | 'TIMEOUT'
  | 'CHANNEL_CLOSED'
  | 'KERNEL'
  | 'AUTHENTICATION'
  | 'OBJECT_TOO_LARGE'
  | 'NOT_SERIALIZABLE'
  | 'SETTINGS_DIFFER';

/** The base of every error rxccl raises: `code` says which kind (docs/errors.md), the message says who and what. */
export class RxcclError extends Error {
  readonly code: RxcclErrorCode;

  constructor(code: RxcclErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** A frame or header broke the GX1 wire format. */
export class ProtocolError extends RxcclError {
  constructor(message: string) {
    super('PROTOCOL', message);
  }
}

/** A caller, environment variable or peer asked for something the session cannot do. */
export class ConfigurationError extends RxcclError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INVALID_CONFIGURATION', message, options);
  }
}

/**
 * What `read` returns, where `read` reads the setting `name` (an environment variable, or the
 * option that stands in for it). A refusal from a check the setting shares with others (`topology
 * rank 2 is outside world size 2`) does not say which setting it came from: it is thrown again
 * with the name in front, so every refusal names what it read.
 */
export function readSetting<T>(name: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof ConfigurationError && !error.message.includes(name)) throw new ConfigurationError(`${name}: ${error.message}`, { cause: error });
    throw error;
  }
}

/** A frame carried another job's unique id: it was sent to the wrong session. */
export class WrongSessionError extends RxcclError {
  constructor(message = 'collective frame belongs to another session') {
    super('WRONG_SESSION', message);
  }
}

/** A coordinator's response named another rank than the one that received it (`expected` is this rank). */
export class WrongDestinationError extends RxcclError {
  constructor(readonly expected: number, readonly actual: number) {
    super('WRONG_DESTINATION', `collective response destination ${actual} does not match rank ${expected}`);
  }
}

/**
 * The coordinator or a peer aborted the session; `reason` is the original failure text. The
 * message says who: the coordinator by default, or exactly `message` (a peer mesh names the peer).
 */
export class RemoteAbortError extends RxcclError {
  constructor(
    readonly reason: string,
    message = `collective coordinator aborted: ${reason}`,
    options?: { cause?: unknown },
  ) {
    super('REMOTE_ABORT', message, options);
  }
}

/** An operation (a join, a collective, a receive, a lease) outlived its deadline; the message names what and, for a collective, the missing ranks. */
export class TimeoutError extends RxcclError {
  constructor(operation: string) {
    super('TIMEOUT', `${operation} timed out`);
  }
}

/** A connection or session closed while an operation still needed it; the message names the connection or peer. */
export class ChannelClosedError extends RxcclError {
  constructor(message = 'collective response channel closed') {
    super('CHANNEL_CLOSED', message);
  }
}

/**
 * A rank of this communicator was lost (its process died, its connection closed, or its heartbeat
 * lease ran out) in a fault-tolerant job (`faultTolerant`, GX1_FAULT_TOLERANT=1): every pending and
 * later operation of each communicator it belongs to fails with this, and `shrink()` goes on
 * without it. `rank` is its rank in the job (`jobRanks`).
 */
export class RankLostError extends ChannelClosedError {
  constructor(
    readonly rank: number,
    readonly reason: string,
    where: string,
  ) {
    super(`rank ${rank} was lost (${reason}): ${where} cannot complete; shrink() continues with the ranks left`);
  }
}

/** A connection could not prove it knows the job's secret, or asked for one this side lacks. */
export class AuthenticationError extends RxcclError {
  constructor(message: string) {
    super('AUTHENTICATION', message);
  }
}

/** A reduction kernel was called with arguments it cannot reduce. */
export class KernelError extends RxcclError {
  constructor(message: string) {
    super('KERNEL', message);
  }
}

/**
 * An object message (`sendObject`, `broadcastObject`, ...) whose serialized form is over what one
 * message may carry: `bytes` from `rank`, over `limit`. Nothing was sent for it; in a collective
 * every rank that would have received it fails alike, and the collective itself completes.
 */
export class ObjectTooLargeError extends RxcclError {
  constructor(
    readonly rank: number,
    readonly bytes: number,
    readonly limit: number,
    operation: string,
  ) {
    super('OBJECT_TOO_LARGE', `${operation}: rank ${rank}'s value serializes to ${bytes} bytes, over the limit of ${limit} bytes; send it as tensors, in pieces`);
  }
}

/**
 * An object message whose value the structured clone (`v8.serialize`) refuses: a function, a
 * symbol, a class instance's methods... `reason` is v8's. Nothing was sent for it; in a collective
 * every rank that would have received it fails alike, and the collective itself completes.
 */
export class UnserializableObjectError extends RxcclError {
  constructor(
    readonly rank: number,
    readonly reason: string,
    operation: string,
    options?: { cause?: unknown },
  ) {
    super('NOT_SERIALIZABLE', `${operation}: rank ${rank}'s value cannot be serialized (structured clone): ${reason}`, options);
  }
}

/**
 * Two ranks of a job would choose collectives' algorithms by different settings (`setting`, a
 * `GX1_*` variable or the option standing for it): `ranks[i]` has `values[i]`. Every rank's open
 * fails with this, alike, before any collective could run apart (docs/protocol.md 8.3, step 3).
 */
export class SettingsDifferError extends RxcclError {
  constructor(
    readonly setting: string,
    readonly ranks: readonly [number, number],
    readonly values: readonly [string, string],
  ) {
    super('SETTINGS_DIFFER', `${setting} differs: rank ${ranks[0]} has ${values[0]}, rank ${ranks[1]} has ${values[1]}; every rank must choose collectives alike`);
  }
}

/** The text a failure is reported with to other ranks: an abort keeps its original reason. */
export function failureText(error: unknown): string {
  if (error instanceof RemoteAbortError) return error.reason;
  if (error instanceof Error) return error.message;
  return String(error);
}
