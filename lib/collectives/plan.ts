import type { CollectiveName } from './algorithm.js';
import { estimateCollective, type ModelledCollective, MODELLED_COLLECTIVES } from './cost-model.js';
import { rowEstimate } from './candidate-costs.js';
import { ALGORITHMS, type AlgorithmFamily, candidateEstimates, type Plane, profiledRow, selectAlgorithm, type Situation } from './select.js';

/** One row `auto` weighed for the call, and its estimate (ns; null where the model cannot price it). */
export interface PlannedCandidate {
  readonly algorithm: string;
  readonly family: AlgorithmFamily;
  readonly plane: Plane;
  readonly estimatedTimeNs: number | null;
}

/**
 * What a collective of a given size will run, and why: the reference's `CollectivePlan`
 * (src/rank/topology.rs) with rxccl's table. `session.plan(collective, bytes)` returns it, and the
 * call of that size runs exactly this algorithm (`events$` names the same).
 */
export interface CollectivePlan {
  readonly collective: CollectiveName;
  /** This rank's tensor in bytes (a reduce-scatter's whole input). */
  readonly bytes: number;
  /** The algorithm, as `events$` and GX1_DEBUG name it. */
  readonly algorithm: string;
  readonly family: AlgorithmFamily;
  readonly plane: Plane;
  /**
   * `policy`: GX1_COLLECTIVE_ALGORITHM asked for it; `autotune`: `auto` took the autotune
   * profile's measured choice; `model`: `auto` chose it, the cheapest of `candidates` (ties to
   * the row listed first), or the staged row where there are none.
   */
  readonly source: 'policy' | 'autotune' | 'model';
  /**
   * The estimate of what runs, ns: the profile's measured time where it chose, else the choice
   * model's (./choice-cost.ts); for the staged row the reference's direct estimate (null for the
   * collectives it has none for).
   */
  readonly estimatedTimeNs: number | null;
  /**
   * Every row `auto` weighs for this call (the rows of the session's plane that fit), in table
   * order, with the choice model's estimates: the same on every rank, so `auto` without a profile
   * runs the cheapest. Empty on tcp_host_staged, at one rank, and for the scatter and all-to-all-v.
   */
  readonly candidates: readonly PlannedCandidate[];
  /**
   * The reference planner's estimates (lib/collectives/cost-model.ts) for the all-reduce,
   * all-gather and reduce-scatter: the staged path, the flat ring, the hierarchy (null without
   * topology groups or where a link is missing); null for other collectives. They no longer
   * choose: `candidates` does.
   */
  readonly directEstimatedTimeNs: number | null;
  readonly peerEstimatedTimeNs: number | null;
  readonly hierarchicalEstimatedTimeNs: number | null;
  readonly ringChannels: number;
}

function isModelled(collective: CollectiveName): collective is ModelledCollective {
  return (MODELLED_COLLECTIVES as readonly string[]).includes(collective);
}

/** The plan of one call of `collective` in `situation` (the same choice `selectAlgorithm` makes for it). */
export function planCollective(collective: CollectiveName, situation: Situation): CollectivePlan {
  const row = selectAlgorithm(collective, situation);
  const { tuning } = situation;
  const estimates = isModelled(collective) ? estimateCollective(collective, situation) : null;
  const measured = profiledRow(collective, situation)?.entry;
  const candidates = candidateEstimates(collective, situation);
  const modelled = row.plane === 'coordinator' ? (estimates?.direct ?? null) : (candidates.find((candidate) => candidate.row === row)?.estimatedTimeNs ?? rowEstimate(collective, ALGORITHMS[collective], row, situation));
  return {
    collective,
    bytes: situation.bytes,
    algorithm: row.name,
    family: row.family,
    plane: row.plane,
    source: tuning.algorithm !== 'auto' ? 'policy' : measured !== undefined ? 'autotune' : 'model',
    estimatedTimeNs: measured?.measured_time_ns ?? modelled,
    candidates: candidates.map(({ row: { name, family, plane }, estimatedTimeNs }) => ({ algorithm: name, family, plane, estimatedTimeNs })),
    directEstimatedTimeNs: estimates?.direct ?? null,
    peerEstimatedTimeNs: estimates?.peer ?? null,
    hierarchicalEstimatedTimeNs: estimates?.hierarchical ?? null,
    ringChannels: tuning.ringChannels,
  };
}
