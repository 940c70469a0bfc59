import { ConfigurationError } from '../errors.js';
import { ANY_RANK } from '../protocol/constants.js';
import { type DType, ElementType, elementTypeOfDType } from '../protocol/element-type.js';
import { COLLECTIVE_OPCODES, Opcode, opcodeName } from '../protocol/opcode.js';
import { reduceOpCode, type ReduceOp } from '../protocol/reduce-op.js';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import { checkCount, checkReduceOp } from './arguments.js';

/**
 * A raw collective, as the reference design's `exchange` / `ExchangeOptions`: the caller states
 * the header fields the coordinator's agreement checks, including a layout hash of its own, so
 * collectives a user defines on top of rxccl get the same cross-rank agreement as built-in ones.
 */
export interface ExchangeOptions {
  /** A collective opcode: Barrier, Broadcast .. AllToAllV (not SetTimeout: use `setTimeout`). */
  readonly opcode: Opcode;
  /** Element type of the payload (a dtype name, or `ElementType.None` when there is no payload). */
  readonly elementType: DType | ElementType;
  /** Elements this rank declares. */
  readonly count: number;
  /** The root of a rooted collective. */
  readonly root?: number;
  readonly reduceOp?: ReduceOp;
  /** Header flags to set (the PAYLOAD flag follows the payload by itself). */
  readonly flags?: number;
  /** Taken into the agreement: ranks whose layouts differ fail, named, at the coordinator. */
  readonly layoutHash?: bigint;
}

/** Checks an exchange's options and turns them into the request the coordinator gets. */
export function exchangeRequest(options: ExchangeOptions, worldSize: number): CollectiveRequest {
  // SetTimeout is a collective too, but it changes the session: it has its own method.
  if (!COLLECTIVE_OPCODES.has(options?.opcode) || options.opcode === Opcode.SetTimeout) {
    throw new ConfigurationError(`exchange opcode ${typeof options?.opcode === 'number' ? opcodeName(options.opcode) : String(options?.opcode)} is not a collective`);
  }
  const elementType = typeof options.elementType === 'string' ? elementTypeOfDType(options.elementType) : options.elementType;
  if (!Number.isInteger(elementType) || elementType < ElementType.None || elementType > ElementType.F64) {
    throw new ConfigurationError(`exchange element type ${String(options.elementType)} is not a GX1 element type`);
  }
  const root = options.root ?? ANY_RANK;
  if (root !== ANY_RANK && (!Number.isInteger(root) || root < 0 || root >= worldSize)) {
    throw new ConfigurationError(`exchange root rank ${String(root)} is outside world size ${worldSize}`);
  }
  const layoutHash = options.layoutHash ?? 0n;
  if (typeof layoutHash !== 'bigint' || layoutHash < 0n || layoutHash > 0xffff_ffff_ffff_ffffn) {
    throw new ConfigurationError(`exchange layout hash ${String(layoutHash)} must be a bigint in 0..2^64-1`);
  }
  return {
    opcode: options.opcode,
    elementType,
    elementCount: checkCount(options.count, 'exchange count'),
    rootRank: root,
    reduceOp: options.reduceOp === undefined ? 0 : reduceOpCode(checkReduceOp(options.reduceOp)),
    flags: options.flags ?? 0,
    tag: layoutHash,
  };
}
