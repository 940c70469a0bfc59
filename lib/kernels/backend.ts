/** What the scheduler needs from a set of kernels: the native addon or the TypeScript reference. */
import type { KernelCall } from './calls.js';

export interface KernelBackend {
  readonly name: 'native' | 'reference';
  /** Runs the call to completion before returning. */
  run(call: KernelCall): void;
  /**
   * Runs the call later, off the JS thread where the backend can, and calls `done` on the JS
   * thread when it finished. The returned function stops it if it has not started yet.
   */
  start(call: KernelCall, done: (error: Error | null) => void): () => void;
}
