import { createHash } from 'node:crypto';
import { UniqueId } from '../protocol/unique-id.js';

/**
 * What identifies one run of a job to every one of its ranks without them talking: the
 * launcher's job/run id plus the coordinator address and world size. Two runs never share it
 * (a restarted torchrun group has a new restart count, a new Slurm step a new step id), so a
 * straggler of an old run is turned away by the coordinator of the new one.
 */
export type JobIdentity = readonly (string | number | undefined)[];

function digest(identity: JobIdentity): Buffer {
  return createHash('sha256')
    .update(JSON.stringify(['rxccl', ...identity.map((part) => part ?? null)]))
    .digest();
}

/** The session's unique id when the environment gives none: the first 16 bytes of the digest. */
export function uniqueIdOf(identity: JobIdentity): string {
  return UniqueId.fromBytes(digest(identity).subarray(0, UniqueId.BYTES)).toHex();
}

/**
 * Ports derived from a job identity lie in 20000..31999: below Linux's ephemeral range
 * (32768..60999), so an outgoing connection of another program never holds the port, and spread
 * wide enough that two jobs sharing a host rarely pick the same one.
 */
export const DERIVED_PORT_BASE = 20_000;
export const DERIVED_PORT_SPAN = 12_000;

/** The coordinator port every rank computes alike when the launcher does not name one. */
export function portOf(identity: JobIdentity): number {
  return DERIVED_PORT_BASE + (digest(identity).readUInt32BE(UniqueId.BYTES) % DERIVED_PORT_SPAN);
}
