/**
 * `receive` and `messages` are typed by the dtype asked for. The assertions are types: tsc checks
 * them (`npm test` runs it first); the function holding them is never called.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { DType, RankSession, TaggedTensor, Tensor, TensorOf } from '../../lib/index.js';

function receiveTypes(session: RankSession, someDType: DType) {
  expectTypeOf(session.receive(0, 1, { dtype: 'f32', count: 4 })).resolves.toEqualTypeOf<Float32Array>();
  expectTypeOf(session.receive(null, 1n, { dtype: 'i64', count: 4 })).resolves.toEqualTypeOf<BigInt64Array>();
  expectTypeOf(session.receive(0, 1, { dtype: 'u8', count: 4 }, { rail: 0 })).resolves.toEqualTypeOf<Uint8Array>();
  expectTypeOf(session.receive(0, 1, { dtype: 'bf16', count: 4 })).resolves.toEqualTypeOf<TaggedTensor<Uint16Array>>();
  // A dtype known only at run time gives any tensor.
  expectTypeOf(session.receive(0, 1, { dtype: someDType, count: 4 })).resolves.toMatchTypeOf<Tensor>();
  expectTypeOf(session.messages(null, 1, { dtype: 'i32', count: 4 })).toMatchTypeOf<AsyncIterable<Int32Array>>();
  expectTypeOf<TensorOf<'f64'>>().toEqualTypeOf<Float64Array>();
}

describe('dtype-mapped receive types', () => {
  it('are checked by the type checker', () => {
    expectTypeOf(receiveTypes).toBeFunction();
  });
});
