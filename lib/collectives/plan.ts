import type { CollectiveName } from './algorithm.js';
import { type CostEstimates, estimateCollective, type ModelledCollective, MODELLED_COLLECTIVES } from './cost-model.js';
import { type AlgorithmFamily, type Plane, profiledRow, selectAlgorithm, type Situation } from './select.js';

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
   * profile's measured choice; `model`: `auto` chose it (by size, hosts and, for the hierarchy,
   * the cost model).
   */
  readonly source: 'policy' | 'autotune' | 'model';
  /** The estimate of what runs, ns (the profile's measured time where it chose); null where the model has none (see below). */
  readonly estimatedTimeNs: number | null;
  /**
   * The cost model's estimates (lib/collectives/cost-model.ts) for the all-reduce, all-gather and
   * reduce-scatter, as the reference's planner makes them: the staged path, the flat ring, the
   * hierarchy (null without topology groups or where a link is missing); null for other collectives.
   */
  readonly directEstimatedTimeNs: number | null;
  readonly peerEstimatedTimeNs: number | null;
  readonly hierarchicalEstimatedTimeNs: number | null;
  readonly ringChannels: number;
}

function isModelled(collective: CollectiveName): collective is ModelledCollective {
  return (MODELLED_COLLECTIVES as readonly string[]).includes(collective);
}

/** The estimate of the family that runs: the staged path's, the ring's or the hierarchy's. */
function estimateOf(family: AlgorithmFamily, estimates: CostEstimates | null): number | null {
  if (estimates === null) return null;
  if (family === 'staged') return estimates.direct;
  if (family === 'ring') return estimates.peer;
  if (family === 'hierarchical') return estimates.hierarchical;
  return null;
}

/** The plan of one call of `collective` in `situation` (the same choice `selectAlgorithm` makes for it). */
export function planCollective(collective: CollectiveName, situation: Situation): CollectivePlan {
  const row = selectAlgorithm(collective, situation);
  const { tuning } = situation;
  const estimates = isModelled(collective) ? estimateCollective(collective, situation) : null;
  const measured = profiledRow(collective, situation)?.entry;
  return {
    collective,
    bytes: situation.bytes,
    algorithm: row.name,
    family: row.family,
    plane: row.plane,
    source: tuning.algorithm !== 'auto' ? 'policy' : measured !== undefined ? 'autotune' : 'model',
    estimatedTimeNs: measured?.measured_time_ns ?? estimateOf(row.family, estimates),
    directEstimatedTimeNs: estimates?.direct ?? null,
    peerEstimatedTimeNs: estimates?.peer ?? null,
    hierarchicalEstimatedTimeNs: estimates?.hierarchical ?? null,
    ringChannels: tuning.ringChannels,
  };
}
