/**
 * Single copy's agreement as a played peer writes it (native/single_copy.h; docs/protocol.md 9.9,
 * "Single copy", revision 8): the sizes, an offer of nothing, and an offer forged to name any
 * process and address of this host, for spec/transport/single-copy.spec.ts and the forging rank of
 * spec/security/single-copy-forgery.spec.ts.
 */
import { readFileSync, statSync } from 'node:fs';

export const CHALLENGE_BYTES = 16;
export const OFFER_BYTES = 48;

/** What a sender holds at its probe for `challenge`: each byte complemented (native/single_copy.h ProbeOf). */
export function probeOf(challenge: Uint8Array): Uint8Array {
  return Uint8Array.from(challenge, (byte) => ~byte & 0xff);
}

/** An offer that offers nothing (flags 0), as a sender with GX1_SINGLE_COPY=off writes it. */
export function offerOfNothing(): Uint8Array {
  const offer = new Uint8Array(OFFER_BYTES);
  offer.set([0x47, 0x58, 0x31, 0x43, 2]);
  return offer;
}

/**
 * An offer as a sender of this host writes it (boot id, network namespace), naming `pid` and
 * `address` as it likes, and with `ringFd` a shared-memory ring: that descriptor of the process
 * named (flag bit 1, bytes 36..39).
 */
export function forgedOffer(pid: number, address: bigint, ringFd?: number): Uint8Array {
  const offer = Buffer.alloc(OFFER_BYTES);
  offer.set([0x47, 0x58, 0x31, 0x43, 2, ringFd === undefined ? 1 : 3]);
  if (ringFd !== undefined) offer.writeUInt32LE(ringFd, 36);
  Buffer.from(readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().replaceAll('-', ''), 'hex').copy(offer, 8);
  offer.writeBigUInt64LE(statSync('/proc/self/ns/net', { bigint: true }).ino, 24);
  offer.writeUInt32LE(pid, 32);
  offer.writeBigUInt64LE(address, 40);
  return offer;
}
