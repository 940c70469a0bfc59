import { readdirSync, readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** The collector, run now (what --expose-gc gives). */
export function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/**
 * Collects until external memory stops changing, and returns it: finalizers run a turn of the
 * event loop after the collection that found their buffers unreachable, so buffers dropped earlier
 * would otherwise be freed in the middle of a measurement.
 */
export async function settleExternalMemory(): Promise<number> {
  let last = Number.NaN;
  for (let round = 0; round < 20 && process.memoryUsage().external !== last; round++) {
    last = process.memoryUsage().external;
    collect();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().external;
}

/** Whether the result pool's filler thread (native/result_pool.h, named rxccl-results) runs in this process now. */
export function resultFillerRunning(): boolean {
  return readdirSync('/proc/self/task').some((task) => {
    try {
      return readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim() === 'rxccl-results';
    } catch {
      return false; // (a thread that ended while we looked)
    }
  });
}
