/**
 * A kernel call: one checked request, ready for a backend. Building one validates the request
 * (see validate.ts) and allocates the output when the caller gave none, so backends only run.
 */
import { KernelError } from '../errors.js';
import type { DType } from '../protocol/element-type.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import { dtypeWidth } from '../tensor.js';
import { checkBytes, checkPositiveInteger, overlaps, validateDType, validateReduction } from './validate.js';

export interface ReduceSlicesRequest {
  dtype: DType;
  op: ReduceOp;
  /** `slices` equal slices laid end to end (rank 0's, rank 1's, ...), at any byte offset. */
  input: Uint8Array;
  /** k >= 1. */
  slices: number;
  /** Destination of input.length / slices bytes; may be slice 0 of input itself. */
  output?: Uint8Array;
}

export interface ReduceSpansRequest {
  dtype: DType;
  op: ReduceOp;
  /** k >= 1 buffers of one length, anywhere, folded left in this order. */
  sources: readonly Uint8Array[];
  /** Destination of that length; may be any one source itself, and overlap no other. */
  output: Uint8Array;
  /** avg only: what the folded sum is divided by (default the number of sources). */
  divisor?: number;
}

export interface AccumulateRequest {
  dtype: DType;
  op: ReduceOp;
  /** Updated in place: accumulator = op(accumulator, source); for avg a running sum. */
  accumulator: Uint8Array;
  /** As many bytes as the accumulator; may be the accumulator itself, not a shifted overlap. */
  source: Uint8Array;
}

export interface DivideRequest {
  dtype: DType;
  /** Updated in place: data = data / divisor. */
  data: Uint8Array;
  /** A positive integer: the number of contributions summed into data. */
  divisor: number;
}

export type KernelCall =
  | { kind: 'reduceSlices'; dtype: DType; op: ReduceOp; input: Uint8Array; slices: number; count: number; output: Uint8Array }
  | { kind: 'reduceSpans'; dtype: DType; op: ReduceOp; sources: readonly Uint8Array[]; count: number; output: Uint8Array; divisor: number }
  | { kind: 'accumulate'; dtype: DType; op: ReduceOp; accumulator: Uint8Array; source: Uint8Array; count: number }
  | { kind: 'divide'; dtype: DType; data: Uint8Array; divisor: number; count: number };

export function reduceSlicesCall(request: ReduceSlicesRequest): KernelCall {
  const { dtype, op, input, slices } = request;
  validateReduction(dtype, op);
  const elements = checkBytes(input, 'input', dtype);
  checkPositiveInteger(slices, 'slices');
  if (elements % slices !== 0) {
    throw new KernelError(`input has ${elements} ${dtype} elements, which do not split into ${slices} equal slices`);
  }
  const count = elements / slices;
  const sliceBytes = count * dtypeWidth(dtype);
  const output = request.output ?? new Uint8Array(sliceBytes);
  checkBytes(output, 'output', dtype);
  if (output.length !== sliceBytes) {
    throw new KernelError(`output has ${output.length} bytes; one slice of input is ${sliceBytes} (${input.length} / ${slices})`);
  }
  const isSliceZero = output.buffer === input.buffer && output.byteOffset === input.byteOffset;
  if (!isSliceZero && overlaps(output, input)) {
    throw new KernelError('output overlaps the input somewhere other than exactly slice 0');
  }
  return { kind: 'reduceSlices', dtype, op, input, slices, count, output };
}

export function reduceSpansCall(request: ReduceSpansRequest): KernelCall {
  const { dtype, op, sources, output } = request;
  validateReduction(dtype, op);
  if (!Array.isArray(sources) || sources.length === 0) throw new KernelError('sources must be a non-empty array of Uint8Arrays');
  const count = checkBytes(output, 'output', dtype);
  sources.forEach((source, index) => {
    checkBytes(source, `sources[${index}]`, dtype);
    if (source.length !== output.length) throw new KernelError(`sources[${index}] has ${source.length} bytes, the output ${output.length}; they must be equal`);
    const same = source.buffer === output.buffer && source.byteOffset === output.byteOffset;
    if (!same && overlaps(source, output)) throw new KernelError(`the output overlaps sources[${index}] without being it`);
  });
  const divisor = checkPositiveInteger(request.divisor ?? sources.length, 'divisor');
  return { kind: 'reduceSpans', dtype, op, sources, count, output, divisor };
}

export function accumulateCall(request: AccumulateRequest): KernelCall {
  const { dtype, op, accumulator, source } = request;
  validateReduction(dtype, op);
  const count = checkBytes(accumulator, 'accumulator', dtype);
  checkBytes(source, 'source', dtype);
  if (source.length !== accumulator.length) {
    throw new KernelError(`source has ${source.length} bytes, the accumulator ${accumulator.length}; they must be equal`);
  }
  const sameRange = source.buffer === accumulator.buffer && source.byteOffset === accumulator.byteOffset;
  if (!sameRange && overlaps(source, accumulator)) {
    throw new KernelError('accumulator and source overlap without being the same range');
  }
  return { kind: 'accumulate', dtype, op, accumulator, source, count };
}

export function divideCall(request: DivideRequest): KernelCall {
  const { dtype, data, divisor } = request;
  validateDType(dtype);
  const count = checkBytes(data, 'data', dtype);
  checkPositiveInteger(divisor, 'divisor');
  return { kind: 'divide', dtype, data, divisor, count };
}

/** The buffer a call writes and its observable emits. */
export function resultOf(call: KernelCall): Uint8Array {
  switch (call.kind) {
    case 'reduceSlices':
    case 'reduceSpans':
      return call.output;
    case 'accumulate':
      return call.accumulator;
    case 'divide':
      return call.data;
  }
}

/** Bytes a call reads: what its running time is proportional to. */
export function bytesRead(call: KernelCall): number {
  switch (call.kind) {
    case 'reduceSlices':
      return call.input.length;
    case 'reduceSpans':
      return call.sources.length * call.output.length;
    case 'accumulate':
      return 2 * call.accumulator.length;
    case 'divide':
      return call.data.length;
  }
}
