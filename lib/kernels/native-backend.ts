/** The native addon as a KernelBackend: each call maps onto one addon entry point. */
import { elementTypeOfDType } from '../protocol/element-type.js';
import { reduceOpCode } from '../protocol/reduce-op.js';
import { type CancelToken, type KernelAddon, type KernelDone, rethrowNativeError } from './addon.js';
import type { KernelBackend } from './backend.js';
import type { KernelCall } from './calls.js';

export function nativeBackend(addon: KernelAddon): KernelBackend {
  return {
    name: 'native',
    run(call) {
      invoke(addon, call);
    },
    start(call, done) {
      // With a completion callback the addon always queues the kernel and returns its token.
      const token = invoke(addon, call, (error) => done(error)) as CancelToken;
      return () => addon.cancel(token);
    },
  };
}

// Offsets are 0: a request's Uint8Array is already the exact range (a subarray of a larger
// buffer works as is). The element-offset parameters serve direct callers of the addon.
function invoke(addon: KernelAddon, call: KernelCall, done?: KernelDone): CancelToken | undefined {
  const dtype = elementTypeOfDType(call.dtype);
  try {
    switch (call.kind) {
      case 'reduceSlices':
        return addon.reduceSlices(dtype, reduceOpCode(call.op), call.input, 0, call.count, call.slices, call.output, 0, done);
      case 'reduceSpans':
        return addon.reduceSpans(dtype, reduceOpCode(call.op), call.sources, call.output, call.count, call.divisor, done);
      case 'accumulate':
        return addon.accumulate(dtype, reduceOpCode(call.op), call.accumulator, 0, call.source, 0, call.count, done);
      case 'divide':
        return addon.divide(dtype, call.data, 0, call.count, call.divisor, done);
    }
  } catch (error) {
    return rethrowNativeError(error);
  }
}
