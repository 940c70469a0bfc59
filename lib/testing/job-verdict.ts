import type { SimulationResult } from './simulate-job.js';

/**
 * A simulated job judged as its author judges it, worst first: `stuck` (some rank waits on what
 * can never happen: the hang), `wrong` (a rank returned a value the author's check refuses),
 * `failed` (some rank threw or was killed, and none hung: under faults, often what is wanted:
 * "failed but not stuck"), `ok`. `text` says which ranks and why, in one sentence.
 */
export type JobVerdict =
  | { readonly kind: 'ok'; readonly text: string }
  | { readonly kind: 'stuck' | 'failed' | 'wrong'; readonly ranks: readonly number[]; readonly text: string };

/**
 * Judges `result`; `check(value, rank)` returns null for a right value, else why it is wrong.
 * @example
 * const verdict = judgeJob(result, (total) => (total === 10 ? null : `total ${total}, expected 10`));
 * expect(verdict.kind).not.toBe('stuck'); // a fault may fail the job, never hang it
 */
export function judgeJob<T>(result: SimulationResult<T>, check?: (value: T, rank: number) => string | null): JobVerdict {
  const stuck = result.ranks.filter((outcome) => outcome.status === 'stuck');
  if (stuck.length > 0) {
    return {
      kind: 'stuck',
      ranks: stuck.map((outcome) => outcome.rank),
      text: `stuck: ${stuck.map((outcome) => `rank ${outcome.rank} after ${outcome.steps} steps`).join(', ')} waited on something that can never happen`,
    };
  }
  const wrong = result.ranks.flatMap((outcome) => {
    const why = outcome.status === 'returned' && check !== undefined ? check(outcome.value, outcome.rank) : null;
    return why === null ? [] : [{ rank: outcome.rank, why }];
  });
  if (wrong.length > 0) return { kind: 'wrong', ranks: wrong.map(({ rank }) => rank), text: `wrong: ${wrong.map(({ rank, why }) => `rank ${rank}: ${why}`).join('; ')}` };
  const failed = result.ranks.filter((outcome) => outcome.status === 'threw' || outcome.status === 'killed');
  if (failed.length > 0) {
    return {
      kind: 'failed',
      ranks: failed.map((outcome) => outcome.rank),
      text: `failed, not stuck: ${failed.map((outcome) => (outcome.status === 'threw' ? `rank ${outcome.rank} threw ${outcome.error.code ?? outcome.error.name}: ${outcome.error.message}` : `rank ${outcome.rank} was killed`)).join('; ')}`,
    };
  }
  return { kind: 'ok', text: `ok: every rank returned${check === undefined ? '' : ' a right value'} (${result.ranks.length} ranks, ${result.virtualTimeMs} virtual ms)` };
}
