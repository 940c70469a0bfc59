import { ProtocolError } from '../errors.js';
import { type OperationDescriptor, operationMismatch, sameOperation } from '../protocol/agreement.js';
import { ANY_RANK } from '../protocol/constants.js';
import { decodeDescriptor, DESCRIPTOR_BYTES } from '../protocol/descriptor-codec.js';
import { ElementType } from '../protocol/element-type.js';
import { layoutHash, layoutText } from '../protocol/layout-hash.js';
import type { CollectiveRequest } from '../transport/collective-channel.js';

/**
 * A collective's descriptor, as every rank states it to the others (docs/protocol.md 9.7): in the
 * JS plane's headers alone (./schedule/link-agreement.ts), and as the header of every message on
 * the native plane's data links.
 */

/** The descriptor the coordinator's agreement would check for `request`. */
export function descriptorOf(request: CollectiveRequest, layout: string): OperationDescriptor {
  return {
    opcode: request.opcode,
    elementType: request.elementType ?? ElementType.None,
    rootRank: request.rootRank ?? ANY_RANK,
    elementCount: request.elementCount ?? 0,
    reduceOp: request.reduceOp ?? 0,
    layoutHash: requestLayoutHash(request, layout),
  };
}

/**
 * The layout the ranks agree on for `request` run by an algorithm of `layout`: the algorithm's
 * alone, or, where the caller's request carries a layout of its own in its tag (a fused bucket's
 * tensors), both, named so that a mismatch shows each (`"ring; fused f32 [1024 x256]"`).
 */
export function requestLayoutHash(request: CollectiveRequest, layout: string): bigint {
  const own = request.tag ?? 0n;
  if (own === 0n) return layout === '' ? 0n : layoutHash(layout);
  return layout === '' ? own : layoutHash(`${layout}; ${layoutText(own) ?? String(own)}`);
}

/**
 * Checks `peer`'s agreement message against this rank's own descriptor, as the coordinator's
 * agreement would (a mismatch names both ranks, the lower first); returns the peer's data.
 */
export function checkAgreement(received: Uint8Array, peer: number, rank: number, own: OperationDescriptor, number: bigint): Uint8Array {
  const theirs = decodeDescriptor(received);
  if (theirs.sequence !== number) {
    throw new ProtocolError(`rank ${peer} sent mesh collective ${theirs.sequence} where rank ${rank} is at ${number}`);
  }
  if (!sameOperation(own, theirs.descriptor)) {
    const [first, second] = peer < rank ? ([[peer, theirs.descriptor], [rank, own]] as const) : ([[rank, own], [peer, theirs.descriptor]] as const);
    throw operationMismatch(number, first[0], first[1], second[0], second[1]);
  }
  return received.subarray(DESCRIPTOR_BYTES);
}

