import { ProtocolError } from '../errors.js';
import type { OperationDescriptor } from './agreement.js';
import type { ElementType } from './element-type.js';
import type { Opcode } from './opcode.js';

/** Bytes of an encoded descriptor: a collective's header on the links (docs/protocol.md 9.7, 9.9). */
export const DESCRIPTOR_BYTES = 32;

/**
 * A collective's descriptor as the head of its header on the links, little-endian:
 * opcode u8, elementType u8, reduceOp u8, 0 u8, rootRank u32, elementCount u64, layoutHash u64,
 * sequence u64 (on the links: the number mod 2^32, then the message's label). Every rank sends
 * its own on the links it uses, so every receiver can check it agrees.
 */
export function encodeDescriptor(descriptor: OperationDescriptor, sequence: bigint, target: Uint8Array): void {
  const view = new DataView(target.buffer, target.byteOffset, DESCRIPTOR_BYTES);
  view.setUint8(0, descriptor.opcode);
  view.setUint8(1, descriptor.elementType);
  view.setUint8(2, descriptor.reduceOp);
  view.setUint8(3, 0);
  view.setUint32(4, descriptor.rootRank, true);
  view.setBigUint64(8, BigInt(descriptor.elementCount), true);
  view.setBigUint64(16, descriptor.layoutHash, true);
  view.setBigUint64(24, sequence, true);
}

export function decodeDescriptor(message: Uint8Array): { descriptor: OperationDescriptor; sequence: bigint } {
  if (message.length < DESCRIPTOR_BYTES) {
    throw new ProtocolError(`collective header of ${message.length} bytes is shorter than its ${DESCRIPTOR_BYTES}-byte descriptor`);
  }
  const view = new DataView(message.buffer, message.byteOffset, DESCRIPTOR_BYTES);
  if (view.getUint8(3) !== 0) throw new ProtocolError(`collective header byte 3 is ${view.getUint8(3)}, expected 0`);
  const elementCount = view.getBigUint64(8, true);
  if (elementCount > BigInt(Number.MAX_SAFE_INTEGER)) throw new ProtocolError(`collective header element count ${elementCount} is too large`);
  return {
    descriptor: {
      opcode: view.getUint8(0) as Opcode,
      elementType: view.getUint8(1) as ElementType,
      reduceOp: view.getUint8(2),
      rootRank: view.getUint32(4, true),
      elementCount: Number(elementCount),
      layoutHash: view.getBigUint64(16, true),
    },
    sequence: view.getBigUint64(24, true),
  };
}
