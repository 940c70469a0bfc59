import { performance } from 'node:perf_hooks';

/**
 * Milliseconds since the epoch with sub-millisecond resolution. The driver stamps a kill and each
 * rank process stamps its session's error with it: every process reads the same system clock, so
 * the difference is the time from the kill to the error (Date.now() would round it to 1 ms).
 */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}
