import type { RankSession } from '../../lib/session/rank-session.js';

/**
 * The three forms of one all-reduce (f32 sum of `bytes`) the fresh-results benches compare, over
 * one tensor and one output allocated here once.
 */
export function allReduceForms(session: RankSession, bytes: number): Record<'fresh' | 'output' | 'inPlace', () => Promise<unknown>> {
  const tensor = new Float32Array(bytes / 4).fill(1);
  const output = new Float32Array(tensor.length).fill(0);
  return {
    // The result is dropped at once, as a training step drops last step's gradients.
    fresh: () => session.allReduce(tensor, 'sum'),
    // Into memory allocated once: what the out-of-place schedule costs without the allocation.
    output: () => session.allReduce(tensor, 'sum', { output }),
    inPlace: () => session.allReduce(tensor, 'sum', { inPlace: true }),
  };
}
