import { ProtocolError } from '../../errors.js';
import type { OperationDescriptor } from '../../protocol/agreement.js';
import { DESCRIPTOR_BYTES } from '../../protocol/descriptor-codec.js';
import { ElementType } from '../../protocol/element-type.js';
import { opcodeName } from '../../protocol/opcode.js';
import { encodeLinkHeader, linkSequence } from '../../transport/data-plane.js';
import type { ExpectedShape } from '../../transport/links/links.js';
import type { LazyDeadlines } from '../../transport/lazy-deadlines.js';
import { checkAgreement } from '../descriptor.js';
import { pieceTag } from '../peer-data.js';
import { HEADER_ONLY, withHeadersFirst } from './header-exchange.js';
import { headerLabel, labelledHeader, messageLabel, messageText } from './message-label.js';
import type { Schedule } from './schedule.js';

/**
 * The JS plane's agreement on a collective that the session agrees on the mesh (docs/protocol.md
 * 9.9, "The agreement", and 9.6.3): the native plane's header (the descriptor with the schedule's
 * layout hash, the mesh number modulo 2^32) travels on the schedule's own links, as one header
 * alone (labelled as the native plane's, `0xff03ffff`) from each rank to each peer its schedule
 * sends to and to its successor on the ring of ranks (r + 1 mod W), at once. Each rank expects one
 * from each peer its schedule receives from and from its predecessor, compares it with its own
 * (a mismatch names both ranks and both descriptors, as the coordinator's agreement would), and
 * takes that peer's data only after its header passed. So:
 * - every message a rank takes came from a rank that agrees with it;
 * - ranks that disagree are named at once: two neighbours on the ring differ somewhere, and the
 *   successor's header receive does not wait on anything;
 * - no round of its own: the headers leave with the first pieces, and gate only their receiver.
 *
 * The data's pieces keep their tags (9.6.3) and land straight in their spans: a header in every
 * piece would cost each piece a copy on the JS plane, where the native plane's headers are free.
 */
export interface LinkAgreement {
  /** This rank's descriptor, the schedule's layout hash included. */
  readonly own: OperationDescriptor;
  /** The collective's mesh number: the session's count of mesh-agreed collectives. */
  readonly number: bigint;
  /** Where the collective's wait for its peers is timed. */
  readonly deadlines: LazyDeadlines;
  /** Ends the job on every rank with a failure only this rank has seen (a mismatch, a timeout). */
  abort(reason: string): void;
}

/** The agreement headers' tags carry this prefix ("HD"): `pieceTag(0x4844, n, 0, 0, 0)`. */
export const HEADER_TAG_PREFIX = 0x4844;

/** The tag of collective `number`'s headers. */
export function headerTag(number: bigint): bigint {
  return pieceTag(HEADER_TAG_PREFIX, number, 0, 0, 0);
}

/** A header arrives as bytes of any length: one of another length is named, not a shape error. */
export const HEADER_SHAPE: ExpectedShape = { elementType: ElementType.U8, count: null };

/** The header a rank sends alone, bytes 28..31 the native plane's label of a header alone. */
export function headerAlone(agreement: Pick<LinkAgreement, 'own' | 'number'>): Uint8Array {
  return labelledHeader(encodeLinkHeader({ descriptor: agreement.own, sequence: agreement.number }, new Uint8Array(DESCRIPTOR_BYTES)), messageLabel(HEADER_ONLY));
}

/**
 * Whom a rank sends its header to (`to`) and expects one from (`from`), ascending: its schedule's
 * peers each way, and its ring neighbours (none in a world of one).
 */
export function headerPeers(schedule: Schedule, rank: number, worldSize: number): { readonly to: number[]; readonly from: number[] } {
  if (worldSize === 1) return { to: [], from: [] };
  const peers = (of: readonly { readonly peer: number }[], neighbour: number) =>
    [...new Set([...of.map(({ peer }) => peer), neighbour])].filter((peer) => peer !== rank).sort((a, b) => a - b);
  return { to: peers(schedule.sends, (rank + 1) % worldSize), from: peers(schedule.receives, (rank + worldSize - 1) % worldSize) };
}

/**
 * `schedule` with its agreement's headers as messages of no bytes that wait for nothing, first on
 * their links: how the JS plane runs it, for the cost model (../choice-cost.ts).
 */
export function withHeadersAlone(schedule: Schedule, rank: number, worldSize: number): Schedule {
  const { to, from } = headerPeers(schedule, rank, worldSize);
  return withHeadersFirst(schedule, to, from);
}

/**
 * Checks `peer`'s header against this rank's: its descriptor and number as the mesh agreement
 * checks them (`checkAgreement`: both ranks' descriptors named), then that it is a header alone.
 */
export function checkHeader(header: Uint8Array, peer: number, rank: number, agreement: Pick<LinkAgreement, 'own' | 'number'>): void {
  const { own, number } = agreement;
  if (header.length !== DESCRIPTOR_BYTES) {
    throw new ProtocolError(`rank ${peer} sent collective ${number} (${opcodeName(own.opcode)}) an agreement header of ${header.length} bytes, where rank ${rank} expects ${DESCRIPTOR_BYTES}`);
  }
  checkAgreement(labelledHeader(header, 0), peer, rank, own, linkSequence(number));
  const label = headerLabel(header);
  if (label !== messageLabel(HEADER_ONLY)) {
    throw new ProtocolError(`rank ${peer} sent collective ${number} (${opcodeName(own.opcode)}) ${messageText(label)} as its agreement header, where rank ${rank} expects its header alone`);
  }
}

/** The text a collective's wait for its peers ends with, as the mesh agreement has always said it. */
export function missingRanksText(rank: number, agreement: Pick<LinkAgreement, 'own' | 'number'>, missing: readonly number[]): string {
  return `rank ${rank} collective ${agreement.number} (${opcodeName(agreement.own.opcode)}) on the direct peer mesh; missing ranks [${missing.join(',')}]`;
}
