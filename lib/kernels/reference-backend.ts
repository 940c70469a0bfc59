/**
 * The TypeScript reference kernels as a KernelBackend. JavaScript cannot reduce off the JS
 * thread without copying into a worker, so `start` only defers the run to a later turn of the
 * event loop (setImmediate): callers still get asynchronous completion and cancel-before-start.
 */
import type { KernelBackend } from './backend.js';
import type { KernelCall } from './calls.js';
import { referenceAccumulate, referenceDivide, referenceReduceSlices, referenceReduceSpans } from './reference.js';

function run(call: KernelCall): void {
  switch (call.kind) {
    case 'reduceSlices':
      return referenceReduceSlices(call.dtype, call.op, call.input, call.slices, call.output);
    case 'reduceSpans':
      return referenceReduceSpans(call.dtype, call.op, call.sources, call.output, call.divisor);
    case 'accumulate':
      return referenceAccumulate(call.dtype, call.op, call.accumulator, call.source);
    case 'divide':
      return referenceDivide(call.dtype, call.data, call.divisor);
  }
}

export const referenceBackend: KernelBackend = {
  name: 'reference',
  run,
  start(call, done) {
    const immediate = setImmediate(() => {
      try {
        run(call);
      } catch (error) {
        done(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      done(null);
    });
    return () => clearImmediate(immediate);
  },
};
