import type { Communicator } from '../session/rank-session.js';

/**
 * Each metric averaged over every rank (one f64 all-reduce): the loss of the whole global batch
 * from each rank's loss on its shard. Every rank passes the same names.
 */
export async function averageMetrics<M extends Record<string, number>>(communicator: Communicator, metrics: M): Promise<M> {
  const names = Object.keys(metrics).sort();
  const averaged = await communicator.allReduce(Float64Array.from(names, (name) => metrics[name]!), 'avg');
  return Object.fromEntries(names.map((name, index) => [name, averaged[index]!])) as M;
}
