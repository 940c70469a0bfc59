/** Turning a kernel call into a cold Observable, run synchronously or off the JS thread by size. */
import { Observable } from 'rxjs';
import { activeBackend } from './active-backend.js';
import { bytesRead, type KernelCall, resultOf } from './calls.js';

/**
 * Calls reading at most this many bytes run synchronously on subscribe; larger ones go to a
 * worker thread. Handing a kernel to a worker and getting its completion back costs a fixed
 * round trip (two thread wake-ups); a kernel reading up to 1 MiB takes less than that, so running
 * it in place is faster and holds the event loop for less than the round trip would delay its
 * result (bench/kernels/crossover.ts finds the crossover on a machine).
 */
export const SYNC_CROSSOVER_BYTES = 1 << 20;

/**
 * Cold: each subscription validates (`prepare` throws -> error notification), then runs the call
 * and emits its destination buffer once before completing. Unsubscribing before a queued kernel
 * starts cancels it; one that has started finishes writing but emits nothing. A caller that
 * measured a different crossover for its own pattern passes it as `syncUpToBytes`.
 */
export function scheduleKernel(prepare: () => KernelCall, syncUpToBytes = SYNC_CROSSOVER_BYTES): Observable<Uint8Array> {
  return new Observable<Uint8Array>((subscriber) => {
    const call = prepare();
    const backend = activeBackend();
    if (bytesRead(call) <= syncUpToBytes) {
      backend.run(call);
      subscriber.next(resultOf(call));
      subscriber.complete();
      return undefined;
    }
    return backend.start(call, (error) => {
      if (error !== null) {
        subscriber.error(error);
        return;
      }
      subscriber.next(resultOf(call));
      subscriber.complete();
    });
  });
}
