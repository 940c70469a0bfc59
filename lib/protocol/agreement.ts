import { ConfigurationError, ProtocolError } from '../errors.js';
import { ANY_RANK, MAX_U64 } from './constants.js';
import { elementTypeName, type ElementType } from './element-type.js';
import { opcodeName, type Opcode } from './opcode.js';
import { layoutName } from './layout-hash.js';
import { REDUCE_OPS } from './reduce-op.js';

/** What one rank says the next collective is; every rank must say the same. */
export interface OperationDescriptor {
  readonly opcode: Opcode;
  readonly elementType: ElementType;
  readonly rootRank: number;
  readonly elementCount: number;
  readonly reduceOp: number;
  /** Extra shape information the ranks must agree on (the header tag of a collective). */
  readonly layoutHash: bigint;
}

export function describeOperation(descriptor: OperationDescriptor): string {
  const root = descriptor.rootRank === ANY_RANK ? 'ANY' : String(descriptor.rootRank);
  const op = descriptor.reduceOp === 0 ? 'none' : (REDUCE_OPS[descriptor.reduceOp - 1] ?? `unknown(${descriptor.reduceOp})`);
  return (
    `{${opcodeName(descriptor.opcode)} ${elementTypeName(descriptor.elementType)} root ${root} ` +
    `count ${descriptor.elementCount} op ${op} layout ${layoutName(descriptor.layoutHash)}}`
  );
}

export function sameOperation(a: OperationDescriptor, b: OperationDescriptor): boolean {
  return (
    a.opcode === b.opcode &&
    a.elementType === b.elementType &&
    a.rootRank === b.rootRank &&
    a.elementCount === b.elementCount &&
    a.reduceOp === b.reduceOp &&
    a.layoutHash === b.layoutHash
  );
}

/** The error every rank reports when two ranks submitted different collectives at the same point. */
export function operationMismatch(sequence: bigint, firstRank: number, first: OperationDescriptor, rank: number, descriptor: OperationDescriptor): ProtocolError {
  return new ProtocolError(
    `collective sequence ${sequence} mismatch: rank ${firstRank} submitted ${describeOperation(first)}, ` + `rank ${rank} submitted ${describeOperation(descriptor)}`,
  );
}

/**
 * Cross-rank agreement on the order and shape of collectives. Each rank submits a descriptor for
 * the next sequence; the sequence is agreed (and the next one opens) once every rank submitted an
 * identical descriptor. Submissions may arrive in any rank order; anything else is an error:
 * a mismatch names both ranks and both descriptors, a second submission or a wrong sequence names
 * the rank.
 */
export class CollectiveAgreement {
  private sequence = 0n;
  private readonly submitted: (OperationDescriptor | undefined)[];
  private count = 0;

  constructor(readonly worldSize: number) {
    if (!Number.isInteger(worldSize) || worldSize < 1 || worldSize > 0xffffffff) {
      throw new ConfigurationError(`collective world size ${worldSize} is outside 1..=${0xffffffff}`);
    }
    this.submitted = new Array<OperationDescriptor | undefined>(worldSize);
  }

  /** The sequence that submissions currently fill. */
  nextSequence(): bigint {
    return this.sequence;
  }

  /** Returns true when this submission completed the sequence (every rank agreed). */
  submit(rank: number, sequence: bigint, descriptor: OperationDescriptor): boolean {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.worldSize) {
      throw new ProtocolError(`agreement rank ${rank} is outside world size ${this.worldSize}`);
    }
    if (sequence !== this.sequence) {
      throw new ProtocolError(`rank ${rank} submitted collective sequence ${sequence}, expected ${this.sequence}`);
    }
    if (this.submitted[rank] !== undefined) {
      throw new ProtocolError(`rank ${rank} submitted collective sequence ${sequence} twice`);
    }
    const firstRank = this.submitted.findIndex((entry) => entry !== undefined);
    if (firstRank >= 0) {
      const first = this.submitted[firstRank]!;
      if (!sameOperation(first, descriptor)) throw operationMismatch(sequence, firstRank, first, rank, descriptor);
    }
    this.submitted[rank] = descriptor;
    this.count += 1;
    if (this.count < this.worldSize) return false;
    if (this.sequence === MAX_U64) throw new ProtocolError('collective sequence overflow');
    this.sequence += 1n;
    this.submitted.fill(undefined);
    this.count = 0;
    return true;
  }
}
