import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isLoopbackHost } from './loopback-host.js';
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

export function resolveSecret(option: string | Uint8Array | undefined, env: Readonly<Record<string, string | undefined>>): JobSecret | null {
  if (option !== undefined) return checked(typeof option === 'string' ? Buffer.from(option, 'utf8') : option, 'the secret option');
  const inline = env.GX1_SECRET;
  if (inline !== undefined && inline !== '') return checked(Buffer.from(inline.trim(), 'utf8'), 'GX1_SECRET');
  const file = env.GX1_SECRET_FILE;
  if (file === undefined || file === '') return null;
  let text: Buffer;
  try {
    text = readFileSync(file);
  } catch (error) {
    throw new ConfigurationError(`cannot read GX1_SECRET_FILE ${JSON.stringify(file)}: ${(error as Error).message}`, { cause: error });
  }
  const end = text.at(-1) === 0x0a ? (text.at(-2) === 0x0d ? text.length - 2 : text.length - 1) : text.length;
  return checked(text.subarray(0, end), `GX1_SECRET_FILE ${JSON.stringify(file)}`);
}

function checked(bytes: Uint8Array, source: string): JobSecret {
  if (bytes.length < MIN_SECRET_BYTES) {
    throw new ConfigurationError(`${source} holds ${bytes.length} bytes; a job secret needs at least ${MIN_SECRET_BYTES} (rxccl launch and rxccl coordinator generate one)`);
  }
  return new Uint8Array(bytes);
}

let warned = false;

/**
 * Warns once per process when a listener on a non-loopback address runs without a secret: then
 * whoever reaches it and learns the unique id can join the job or pose as a rank.
 */
export function warnIfUnauthenticated(host: string, secret: JobSecret | null, what: string): void {
  if (secret !== null || isLoopbackHost(host) || warned) return;
  warned = true;
  process.emitWarning(
    `rxccl ${what} listens on ${host} without a job secret: anyone who can reach it and knows or guesses the unique id can join the job, ` +
      'read its data or pose as a rank. Set GX1_SECRET or GX1_SECRET_FILE (the same on every rank and the coordinator).',
    { code: 'RXCCL_NO_SECRET' },
  );
}
