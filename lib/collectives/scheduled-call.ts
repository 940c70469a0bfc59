import { freshResult } from '../kernels/result-memory.js';
import { ElementType } from '../protocol/element-type.js';
import { Opcode } from '../protocol/opcode.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import { reduceOpCode } from '../protocol/reduce-op.js';
import { dtypeWidth, type TensorView } from '../tensor.js';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import type { Collectives } from './algorithm.js';
import { shaped } from './staged.js';

/** The collectives that have schedules (scatter and all-to-all-v stay at the coordinator). */
export type ScheduledName = Exclude<keyof Collectives, 'scatter' | 'allToAllV'>;

/**
 * One call of a scheduled collective at one rank: what it agrees on, the shape its schedule is
 * written for, the memory it runs over, and its result once the schedule has run.
 */
export interface ScheduledCall<R> {
  /** The descriptor's fields (docs/protocol.md 9.7). */
  readonly request: CollectiveRequest;
  readonly view: TensorView | null;
  readonly elementType: ElementType;
  readonly width: number;
  readonly count: number;
  readonly op: ReduceOp | null;
  readonly root: number | null;
  /** The result is written in the input's own memory (see `ScheduleInput.inPlace`). */
  readonly inPlace: boolean;
  readonly input: Uint8Array;
  readonly output: Uint8Array;
  result(): R;
}

const NOTHING = new Uint8Array(0);

/** The result's memory: the caller's `output`, else `bytes` of fresh memory (in huge pages from 4 MiB). */
function resultMemory(output: Uint8Array | undefined, bytes: number): Uint8Array {
  return output ?? freshResult(bytes);
}

/** Whether `part` starts exactly `index` parts of its length into `whole` (NCCL's in-place slot forms). */
function isSlot(whole: Uint8Array, part: Uint8Array, index: number): boolean {
  return part.buffer === whole.buffer && part.byteOffset === whole.byteOffset + index * part.length;
}

function tensorCall<R>(view: TensorView, request: CollectiveRequest, fields: { op?: ReduceOp; root?: number; inPlace: boolean; output: Uint8Array }, result: () => R): ScheduledCall<R> {
  return {
    request,
    view,
    elementType: view.elementType,
    width: dtypeWidth(view.dtype),
    count: view.count,
    op: fields.op ?? null,
    root: fields.root ?? null,
    inPlace: fields.inPlace,
    input: view.bytes,
    output: fields.output,
    result,
  };
}

type CallOf = { readonly [N in ScheduledName]: (request: Collectives[N][0], rank: number, worldSize: number) => ScheduledCall<Collectives[N][1]> };

/** Each scheduled collective's call, from its request (validated by the session). */
export const SCHEDULED_CALLS: CallOf = {
  barrier: () => ({
    request: { opcode: Opcode.Barrier },
    view: null,
    elementType: ElementType.U8,
    width: 1,
    count: 0,
    op: null,
    root: null,
    inPlace: false,
    input: NOTHING,
    output: NOTHING,
    result: () => undefined,
  }),
  allReduce: ({ view, op, output, layout }) => {
    const result = resultMemory(output, view.bytes.length);
    return tensorCall(view, shaped(Opcode.AllReduce, view, { reduceOp: reduceOpCode(op), tag: layout }), { op, inPlace: result === view.bytes, output: result }, () => result);
  },
  reduce: ({ view, op, root }, rank) => {
    const result = rank === root ? freshResult(view.bytes.length) : NOTHING;
    return tensorCall(view, shaped(Opcode.Reduce, view, { reduceOp: reduceOpCode(op), rootRank: root }), { op, root, inPlace: false, output: result }, () =>
      rank === root ? result : null,
    );
  },
  broadcast: ({ view, root, output }) => {
    const result = resultMemory(output, view.bytes.length);
    return tensorCall(view, shaped(Opcode.Broadcast, view, { rootRank: root }), { root, inPlace: result === view.bytes, output: result }, () => result);
  },
  allGather: ({ view, output }, rank, worldSize) => {
    const result = resultMemory(output, view.bytes.length * worldSize);
    return tensorCall(view, shaped(Opcode.AllGather, view), { inPlace: isSlot(result, view.bytes, rank), output: result }, () => result);
  },
  gather: ({ view, root, output }, rank, worldSize) => {
    const result = rank === root ? resultMemory(output, view.bytes.length * worldSize) : NOTHING;
    return tensorCall(view, shaped(Opcode.Gather, view, { rootRank: root }), { root, inPlace: false, output: result }, () => (rank === root ? result : null));
  },
  reduceScatter: ({ view, op, output }, rank, worldSize) => {
    const result = resultMemory(output, view.bytes.length / worldSize);
    return tensorCall(view, shaped(Opcode.ReduceScatter, view, { reduceOp: reduceOpCode(op) }), { op, inPlace: isSlot(view.bytes, result, rank), output: result }, () => result);
  },
  allToAll: ({ view, output }) => {
    const result = resultMemory(output, view.bytes.length);
    return tensorCall(view, shaped(Opcode.AllToAll, view), { inPlace: false, output: result }, () => result);
  },
};
