import { ConfigurationError } from '../errors.js';
import type { CollectiveTopology } from '../topology/collective-topology.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import { type CostTuning, DEFAULT_COST_TUNING, estimateCollective, MODELLED_COLLECTIVES } from './cost-model.js';

/**
 * GX1_TOPOLOGY_GROUPS=auto: the groups of fast links in a topology, as the reference's
 * `with_inferred_hierarchy` finds them. Each link's time for `payloadBytes` is a threshold; at
 * each, the ranks joined by links at most that slow form groups (sorted, in order of their first
 * rank); groupings of one group, or of one rank each, are no hierarchy. The candidate with the
 * least estimated all-reduce + all-gather + reduce-scatter time wins (cost-model.ts), ties going
 * to the lexicographically smaller grouping.
 *
 * Unlike the reference, no member is moved to the front as its group's leader: rxccl's
 * hierarchical schedules have none (every member carries a lane between groups).
 */
export function inferTopologyGroups(topology: CollectiveTopology, payloadBytes: number, tuning: CostTuning = DEFAULT_COST_TUNING): number[][] {
  const { worldSize } = topology;
  const linkTime = (source: number, destination: number): number | undefined => {
    const link = topology.link(source, destination);
    return link === undefined ? undefined : link.latencyNs + Math.ceil((payloadBytes * 1000) / link.bandwidthMbps);
  };
  const thresholds = [...new Set(topology.links.map((link) => linkTime(link.source, link.destination)!))].sort((a, b) => a - b);
  const seen = new Set<string>();
  let best: { groups: number[][]; score: number } | null = null;
  const identity = Array.from({ length: worldSize }, (_, rank) => rank);
  for (const threshold of thresholds) {
    const groups = components(worldSize, (source, destination) => (linkTime(source, destination) ?? Infinity) <= threshold);
    const key = JSON.stringify(groups);
    if (groups.length < 2 || groups.length === worldSize || seen.has(key)) continue;
    seen.add(key);
    let score = 0;
    for (const collective of MODELLED_COLLECTIVES) {
      const { hierarchical } = estimateCollective(collective, { worldSize, bytes: payloadBytes, topology, groups, ringOrder: identity, tuning });
      score = hierarchical === null ? Infinity : score + hierarchical;
    }
    if (score === Infinity) continue;
    if (best === null || score < best.score || (score === best.score && compareGroupings(groups, best.groups) < 0)) best = { groups, score };
  }
  if (best === null) throw new ConfigurationError('invalid collective hierarchy: automatic grouping found no distinct fast-link domains');
  return best.groups;
}

/** The ranks joined by `near` links (followed from each rank), each group sorted, groups by their first rank. */
function components(worldSize: number, near: (source: number, destination: number) => boolean): number[][] {
  const groupOf = new Array<number>(worldSize).fill(-1);
  const groups: number[][] = [];
  for (let start = 0; start < worldSize; start++) {
    if (groupOf[start] !== -1) continue;
    const group = [start];
    groupOf[start] = groups.length;
    for (let index = 0; index < group.length; index++) {
      for (let peer = 0; peer < worldSize; peer++) {
        if (groupOf[peer] === -1 && near(group[index]!, peer)) {
          groupOf[peer] = groups.length;
          group.push(peer);
        }
      }
    }
    groups.push(group.sort((a, b) => a - b));
  }
  return groups;
}

/** Lexicographic order of groupings, as Rust compares `Vec<Vec<u32>>`. */
function compareGroupings(first: TopologyGroups, second: TopologyGroups): number {
  for (let index = 0; index < Math.min(first.length, second.length); index++) {
    const a = first[index]!;
    const b = second[index]!;
    for (let at = 0; at < Math.min(a.length, b.length); at++) if (a[at] !== b[at]) return a[at]! - b[at]!;
    if (a.length !== b.length) return a.length - b.length;
  }
  return first.length - second.length;
}
