/** Performs collective cases on a session (a real `RankSession` or a simulated rank). */
import type { RankSession } from '../session/rank-session.js';
import { type CollectiveCase, type Outcome, outcomeOf, tensorOf } from './collective-case.js';

/** What `runCollective` calls: the collectives of a session. */
export type CollectiveSession = Pick<
  RankSession,
  'rank' | 'barrier' | 'broadcast' | 'allGather' | 'gather' | 'reduce' | 'allReduce' | 'scatter' | 'reduceScatter' | 'allToAll' | 'allToAllV'
>;

/** Performs `c` on `session` and records what came back. */
export async function runCollective(session: CollectiveSession, c: CollectiveCase): Promise<Outcome> {
  const input = c.inputs[session.rank] ?? null;
  const tensor = input === null ? null : tensorOf(c.dtype, input, c.tagged);
  switch (c.kind) {
    case 'barrier':
      await session.barrier();
      return { bytes: null };
    case 'broadcast':
      return outcomeOf(await session.broadcast(tensor!, c.root));
    case 'allGather':
      return outcomeOf(await session.allGather(tensor!));
    case 'gather':
      return outcomeOf(await session.gather(tensor!, c.root));
    case 'reduce':
      return outcomeOf(await session.reduce(tensor!, c.op, c.root));
    case 'allReduce':
      return outcomeOf(await session.allReduce(tensor!, c.op));
    case 'scatter':
      return outcomeOf(await session.scatter(tensor, c.root, c.countPerRank!));
    case 'reduceScatter':
      return outcomeOf(await session.reduceScatter(tensor!, c.op));
    case 'allToAll':
      return outcomeOf(await session.allToAll(tensor!));
    case 'allToAllV': {
      const result = await session.allToAllV(tensor!, c.sendCounts![session.rank]!);
      return { ...outcomeOf(result.data), counts: result.counts };
    }
  }
}
