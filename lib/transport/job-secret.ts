import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isLoopbackHost } from './loopback-host.js';
import { debugLog } from '../diagnostics/debug-log.js';
import { ConfigurationError } from '../errors.js';

/**
 * The job's secret: what every connection of the job proves it knows (docs/protocol.md 8.4). It is
 * the credential; the unique id only names the job. `secret` options win over `GX1_SECRET`, which
 * wins over `GX1_SECRET_FILE` (the file's bytes, one final line break dropped).
 */
export type JobSecret = Uint8Array;

/** Shorter secrets are refused: a guessable secret authenticates nobody. */
export const MIN_SECRET_BYTES = 16;

/** A fresh secret as `rxccl launch` and `rxccl coordinator` hand it to ranks: 64 hex digits. */
export function generateSecret(): string {
  return randomBytes(32).toString('hex');
}

/** What `GX1_SECRET` and `GX1_SECRET_FILE` say, as set (the settings' texts). */
export interface SecretVariables {
  readonly inline: string | undefined;
  readonly file: string | undefined;
}

export function resolveSecret(option: string | Uint8Array | undefined, variables: SecretVariables): JobSecret | null {
  if (option !== undefined) return checked(typeof option === 'string' ? Buffer.from(option, 'utf8') : option, 'the secret option');
  const { inline, file } = variables;
  if (given(inline)) return checked(Buffer.from(inline.trim(), 'utf8'), 'GX1_SECRET');
  if (!given(file)) return null;
  let text: Buffer;
  try {
    text = readFileSync(file);
  } catch (error) {
    throw new ConfigurationError(`cannot read GX1_SECRET_FILE ${JSON.stringify(file)}: ${(error as Error).message}`, { cause: error });
  }
  const end = text.at(-1) === 0x0a ? (text.at(-2) === 0x0d ? text.length - 2 : text.length - 1) : text.length;
  return checked(text.subarray(0, end), `GX1_SECRET_FILE ${JSON.stringify(file)}`);
}

function given(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}

/** Whether the variables give a secret, as `resolveSecret` reads them, without reading the file. */
export function variablesGiveSecret(variables: SecretVariables): boolean {
  return given(variables.inline) || given(variables.file);
}

function checked(bytes: Uint8Array, source: string): JobSecret {
  if (bytes.length < MIN_SECRET_BYTES) {
    throw new ConfigurationError(`${source} holds ${bytes.length} bytes; a job secret needs at least ${MIN_SECRET_BYTES} (rxccl launch and rxccl coordinator generate one)`);
  }
  return new Uint8Array(bytes);
}

/** Whether this process has said `RXCCL_NO_SECRET` already: it says so at most once, whatever the cause. */
let warned = false;

/**
 * The one `RXCCL_NO_SECRET` warning of this process, the first cause found: one line on stderr
 * through the debug log (`rxccl[pid] WARN [RXCCL_NO_SECRET] ...`), not `process.emitWarning`, whose
 * first warning drags Node's `--trace-warnings` hint along: the place it was raised is no news.
 * Only rank 0 and a coordinator call this (the job's secret is every rank's), so a job says it once.
 */
function warnNoSecretOnce(message: string): void {
  if (warned) return;
  warned = true;
  debugLog.warn(`[RXCCL_NO_SECRET] ${message}`);
}

/** For tests: lets the next cause warn again, as in a fresh process. */
export function resetNoSecretWarning(): void {
  warned = false;
}

/**
 * Warns once per process when a listener on a non-loopback address runs without a secret: then
 * whoever reaches it and learns the unique id can join the job or pose as a rank. A coordinator
 * says it for its own listener, rank 0 for its direct peer listeners (the other ranks share its
 * lack of a secret, or could not join: it speaks for the job).
 */
export function warnIfUnauthenticated(host: string, secret: JobSecret | null, what: string): void {
  if (secret !== null || isLoopbackHost(host)) return;
  warnNoSecretOnce(
    `rxccl ${what} listens on ${host} without a job secret: anyone who can reach it and knows or guesses the unique id can join the job, ` +
      'read its data or pose as a rank. Set GX1_SECRET or GX1_SECRET_FILE (the same on every rank and the coordinator).',
  );
}

/**
 * Warns once per process when a rank's unique id was derived from its launcher's environment
 * (torchrun, Slurm, Open MPI, Kubernetes; no `GX1_UNIQUE_ID`) and the variables give no secret: the id is
 * then computable by whoever reads or guesses those variables, so it protects nothing, on loopback
 * too (any user of the host can connect there). Called for rank 0 only, which speaks for the job.
 * `rxccl launch` always gives a secret.
 */
export function warnIfDerivedIdUnauthenticated(launcher: string, variables: SecretVariables): void {
  if (variablesGiveSecret(variables)) return;
  warnNoSecretOnce(
    `rxccl derived this job's unique id from ${launcher}'s environment and no job secret is set: anyone who can read or guess ` +
      'those variables computes the same id and can join the job, read its data or pose as a rank, on loopback too. ' +
      'Set GX1_SECRET to the same secret on every rank (at least 16 bytes, e.g. the output of `openssl rand -hex 32`), ' +
      'or GX1_SECRET_FILE to a file holding it.',
  );
}
