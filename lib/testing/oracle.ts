/**
 * The oracle: the reference semantics of every collective, on bytes. Given what every rank passes,
 * what every rank must get back. Reductions use the TypeScript reference kernels
 * (lib/kernels/reference.ts), which fold the ranks' slices left in rank order, as the contract says
 * every backend must.
 */
import { referenceReduceSlices } from '../kernels/reference.js';
import type { DType } from '../protocol/element-type.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import { arrayClassOf, dtypeWidth } from '../tensor.js';
import { concatBytes } from './bytes.js';
import { type CollectiveCase, isHalf, type Outcome } from './collective-case.js';


function reduceModel(dtype: DType, op: ReduceOp, slices: readonly Uint8Array[]): Uint8Array {
  const input = concatBytes(slices);
  const output = new Uint8Array(input.length / slices.length);
  referenceReduceSlices(dtype, op, input, slices.length, output);
  return output;
}

/** What each rank must get back from `c` in a world of `worldSize` ranks. */
export function modelCollective(c: CollectiveCase, worldSize: number): Outcome[] {
  const width = dtypeWidth(c.dtype);
  const inputs = c.inputs;
  const ranks = Array.from({ length: worldSize }, (_, rank) => rank);
  const shaped = (bytes: Uint8Array, rank: number): Outcome => {
    // A scatter rank that passed null learns the dtype from the wire: tagged only for f16/bf16.
    const tagged = inputs[rank] === null ? isHalf(c.dtype) : c.tagged || isHalf(c.dtype);
    return { bytes, dtype: c.dtype, className: arrayClassOf(c.dtype).name, tagged };
  };
  const shard = (bytes: Uint8Array, index: number, parts: number) => {
    const size = bytes.length / parts;
    return bytes.subarray(index * size, (index + 1) * size);
  };
  const all = () => inputs.map((input) => input!);
  switch (c.kind) {
    case 'barrier':
      return ranks.map(() => ({ bytes: null }));
    case 'broadcast':
      return ranks.map((rank) => shaped(Uint8Array.from(inputs[c.root]!), rank));
    case 'allGather':
      return ranks.map((rank) => shaped(concatBytes(all()), rank));
    case 'gather':
      return ranks.map((rank) => (rank === c.root ? shaped(concatBytes(all()), rank) : { bytes: null }));
    case 'reduce':
      return ranks.map((rank) => (rank === c.root ? shaped(reduceModel(c.dtype, c.op, all()), rank) : { bytes: null }));
    case 'allReduce':
      return ranks.map((rank) => shaped(reduceModel(c.dtype, c.op, all()), rank));
    case 'scatter':
      return ranks.map((rank) => shaped(Uint8Array.from(shard(inputs[c.root]!, rank, worldSize)), rank));
    case 'reduceScatter':
      return ranks.map((rank) => shaped(reduceModel(c.dtype, c.op, all().map((input) => shard(input, rank, worldSize))), rank));
    case 'allToAll':
      return ranks.map((rank) => shaped(concatBytes(all().map((input) => shard(input, rank, worldSize))), rank));
    case 'allToAllV': {
      const counts = c.sendCounts!;
      const segment = (source: number, destination: number) => {
        const start = counts[source]!.slice(0, destination).reduce((sum, count) => sum + count, 0);
        return inputs[source]!.subarray(start * width, (start + counts[source]![destination]!) * width);
      };
      return ranks.map((rank) => ({
        ...shaped(concatBytes(ranks.map((source) => segment(source, rank))), rank),
        counts: ranks.map((source) => counts[source]![rank]!),
      }));
    }
  }
}
