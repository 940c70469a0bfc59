import { ProtocolError } from '../errors.js';

/** Reduction operators, carried in byte 10 of the header so the agreement covers the op. */
export type ReduceOp = 'sum' | 'prod' | 'min' | 'max' | 'avg' | 'band' | 'bor' | 'bxor';

/** Every reduction operator, in wire order: `REDUCE_OPS[i]` is carried as byte value i + 1. */
export const REDUCE_OPS: readonly ReduceOp[] = ['sum', 'prod', 'min', 'max', 'avg', 'band', 'bor', 'bxor'];

/** Wire code of "no reduction" (every non-reducing frame). */
export const REDUCE_OP_NONE = 0;

export function reduceOpCode(op: ReduceOp): number {
  const index = REDUCE_OPS.indexOf(op);
  if (index < 0) throw new ProtocolError(`unknown reduce op ${JSON.stringify(op)}; expected one of ${REDUCE_OPS.join(' ')}`);
  return index + 1;
}

export function reduceOpOfCode(code: number): ReduceOp | null {
  if (code === REDUCE_OP_NONE) return null;
  const op = REDUCE_OPS[code - 1];
  if (op === undefined) throw new ProtocolError(`header field reduceOp is ${code}, expected 0..${REDUCE_OPS.length}`);
  return op;
}

export function isBitwise(op: ReduceOp): boolean {
  return op === 'band' || op === 'bor' || op === 'bxor';
}
