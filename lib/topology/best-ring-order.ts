import { ConfigurationError } from '../errors.js';
import type { CollectiveTopology } from './collective-topology.js';
import { validateRingOrder } from './ring-tuning.js';

/**
 * Choosing the rank orders of ring collectives, as the reference's `best_ring_order` and
 * `best_ring_orders` do. A ring moves every byte over every edge, so it is judged first by its
 * slowest edge (the bottleneck), then by the sum of its edge bandwidths, then by the least total
 * latency. Every rank runs this on the identical topology and must reach the identical orders
 * without talking, so the search is deterministic: no randomness, no time limits, every order
 * starts at rank 0 and ties go to the lexicographically smallest order.
 *
 * Edges are judged by the topology's links, the slowest rail's figures: the reference's `link()`.
 * Rail and aggregate links play no part; they shape how a ring's steps are striped, not which
 * ring is best. A ring needs a link on each of its edges, so an incomplete topology still gets
 * any closed ring it has.
 *
 * The reference's links are undirected; ours are directed, and a hand-written topology may
 * describe a link differently, or only, in one direction. So a ring is kept once, as the
 * reference does, in whichever direction has links on every edge and scores better, the
 * lexicographically smaller on a tie. On symmetric links, all the probe and GX1_TOPOLOGY_LINKS
 * produce, both directions score the same and this is exactly the reference's choice.
 */

/** Up to this many ranks every ring is scored (8!/2 rings at 9 ranks); beyond, a greedy search. */
export const EXACT_RING_SEARCH_MAX_RANKS = 9;

/** The figures a ring order is judged by, in the order they are compared; sums beyond 2^53 are rounded. */
export interface RingMetrics {
  /** The smallest link bandwidth around the ring, MB/s (infinite for a single rank). */
  readonly bottleneckMbps: number;
  /** The sum of the link bandwidths around the ring, MB/s. */
  readonly totalBandwidthMbps: number;
  /** The sum of the link latencies around the ring, ns. */
  readonly latencyNs: number;
}

/**
 * The reference's RingScore. The totals are its u128 sums: exact in a number while they stay
 * within Number.MAX_SAFE_INTEGER, in a bigint beyond (`<` and `>` compare the two exactly).
 */
interface RingScore {
  readonly bottleneck: number;
  readonly totalBandwidth: number | bigint;
  readonly totalLatency: number | bigint;
}

interface ScoredRing {
  readonly order: number[];
  readonly score: RingScore;
}

/** Dense link tables, so the searches never touch a Map; a bandwidth of 0 marks no link. */
interface EdgeTable {
  readonly size: number;
  readonly bandwidth: Float64Array;
  readonly latency: Float64Array;
}

function edgeTable(topology: CollectiveTopology): EdgeTable {
  const size = topology.worldSize;
  const bandwidth = new Float64Array(size * size);
  const latency = new Float64Array(size * size);
  for (const link of topology.links) {
    bandwidth[link.source * size + link.destination] = link.bandwidthMbps;
    latency[link.source * size + link.destination] = link.latencyNs;
  }
  return { size, bandwidth, latency };
}

/** The first edge of the ring `order` without a link, if any. */
function missingEdge(table: EdgeTable, order: readonly number[]): [number, number] | undefined {
  for (let index = 0; index < order.length; index += 1) {
    const from = order[index]!;
    const to = order[(index + 1) % order.length]!;
    if (table.bandwidth[from * table.size + to] === 0) return [from, to];
  }
  return undefined;
}

/**
 * Adds the metrics of the ring's edges. A float sum of non-negative integers that ends within
 * Number.MAX_SAFE_INTEGER was exact at every step; one that does not is redone in bigints.
 */
function exactTotal(values: Float64Array, order: readonly number[], size: number): number | bigint {
  let total = 0;
  for (let index = 0; index < order.length; index += 1) {
    total += values[order[index]! * size + order[(index + 1) % order.length]!]!;
  }
  if (total <= Number.MAX_SAFE_INTEGER) return total;
  let exact = 0n;
  for (let index = 0; index < order.length; index += 1) {
    exact += BigInt(values[order[index]! * size + order[(index + 1) % order.length]!]!);
  }
  return exact;
}

/** The score of a closed ring of two or more ranks. */
function scoreRing(table: EdgeTable, order: readonly number[]): RingScore {
  let bottleneck = Number.POSITIVE_INFINITY;
  for (let index = 0; index < order.length; index += 1) {
    const edge = order[index]! * table.size + order[(index + 1) % order.length]!;
    bottleneck = Math.min(bottleneck, table.bandwidth[edge]!);
  }
  return {
    bottleneck,
    totalBandwidth: exactTotal(table.bandwidth, order, table.size),
    totalLatency: exactTotal(table.latency, order, table.size),
  };
}

/** Positive when `left` is the better ring: wider bottleneck, more bandwidth, less latency. */
function compareScores(left: RingScore, right: RingScore): number {
  if (left.bottleneck !== right.bottleneck) return left.bottleneck > right.bottleneck ? 1 : -1;
  if (left.totalBandwidth > right.totalBandwidth) return 1;
  if (left.totalBandwidth < right.totalBandwidth) return -1;
  if (left.totalLatency < right.totalLatency) return 1;
  if (left.totalLatency > right.totalLatency) return -1;
  return 0;
}

function compareOrders(left: readonly number[], right: readonly number[]): number {
  for (let index = 0; index < left.length; index += 1) {
    const difference = left[index]! - right[index]!;
    if (difference !== 0) return difference;
  }
  return 0;
}

/** The same ring run the other way, still from rank 0. */
function reverseRing(order: readonly number[]): number[] {
  return [order[0]!, ...order.slice(1).reverse()];
}

/**
 * The ring `order` (rank 0 first, links on every edge) in its preferred direction: the
 * reverse where that has links on every edge too and scores better, or scores the same and is
 * lexicographically smaller (the reference's canonical direction).
 */
function preferredDirection(table: EdgeTable, order: number[]): ScoredRing {
  const forward: ScoredRing = { order, score: scoreRing(table, order) };
  const reversed = reverseRing(order);
  if (missingEdge(table, reversed) !== undefined) return forward;
  const backward: ScoredRing = { order: reversed, score: scoreRing(table, reversed) };
  const preference = compareScores(backward.score, forward.score);
  return preference > 0 || (preference === 0 && compareOrders(reversed, order) < 0) ? backward : forward;
}

/**
 * Every closed ring from rank 0, each once, by depth-first search over the links. A ring is
 * reached in both directions where both are closed; only the visit in the reference's canonical
 * direction (second rank below the last) counts then.
 */
function allRings(table: EdgeTable): ScoredRing[] {
  const { size, bandwidth } = table;
  const rings: ScoredRing[] = [];
  const order = [0];
  const used = new Uint8Array(size);
  used[0] = 1;
  const extend = (last: number): void => {
    if (order.length === size) {
      if (bandwidth[last * size] === 0) return;
      const canonical = order[1]! <= order[size - 1]!;
      if (canonical || missingEdge(table, reverseRing(order)) !== undefined) {
        rings.push(preferredDirection(table, [...order]));
      }
      return;
    }
    for (let next = 1; next < size; next += 1) {
      if (used[next] || bandwidth[last * size + next] === 0) continue;
      used[next] = 1;
      order.push(next);
      extend(next);
      order.pop();
      used[next] = 0;
    }
  };
  extend(0);
  return rings;
}

/**
 * The nearest-neighbour ring from `start`: the widest link next, then the quickest, then the
 * lowest rank; rotated to begin at rank 0. Undefined where it runs out of links or the last
 * rank has none back to `start`.
 */
function greedyRing(table: EdgeTable, start: number): number[] | undefined {
  const { size, bandwidth, latency } = table;
  const order = [start];
  const used = new Uint8Array(size);
  used[start] = 1;
  while (order.length < size) {
    const last = order[order.length - 1]!;
    let chosen = -1;
    for (let next = 0; next < size; next += 1) {
      const edge = last * size + next;
      if (used[next] || bandwidth[edge] === 0) continue;
      const current = last * size + chosen;
      if (
        chosen < 0 ||
        bandwidth[edge]! > bandwidth[current]! ||
        (bandwidth[edge] === bandwidth[current] && latency[edge]! < latency[current]!)
      ) {
        chosen = next;
      }
    }
    if (chosen < 0) return undefined;
    used[chosen] = 1;
    order.push(chosen);
  }
  if (bandwidth[order[size - 1]! * size + start] === 0) return undefined;
  const zero = order.indexOf(0);
  return [...order.slice(zero), ...order.slice(0, zero)];
}

/** The distinct greedy rings from every start rank, each in its preferred direction. */
function greedyRings(table: EdgeTable): ScoredRing[] {
  const rings = new Map<string, ScoredRing>();
  for (let start = 0; start < table.size; start += 1) {
    const ring = greedyRing(table, start);
    if (ring === undefined) continue;
    const preferred = preferredDirection(table, ring);
    rings.set(preferred.order.join(','), preferred);
  }
  return [...rings.values()];
}

/**
 * Picks up to `maximum` rings, one at a time, each time the ring whose busiest edge has been
 * used least by the rings already picked, then the one using picked edges least in total, then
 * the best score, then the first in lexicographic order. Usage counts an edge in both
 * directions: parallel rings over the same rank pair share its wire.
 */
function selectDiverseRings(table: EdgeTable, candidates: ScoredRing[], maximum: number): number[][] {
  if (candidates.length === 0) {
    throw new ConfigurationError('invalid collective ring: topology does not contain a closed rank ring');
  }
  const { size } = table;
  const usage = new Uint32Array(size * size);
  const selected: number[][] = [];
  while (selected.length < maximum && candidates.length > 0) {
    let bestIndex = 0;
    let bestMaximumUsage = Number.POSITIVE_INFINITY;
    let bestTotalUsage = Number.POSITIVE_INFINITY;
    for (let index = 0; index < candidates.length; index += 1) {
      const { order, score } = candidates[index]!;
      let maximumUsage = 0;
      let totalUsage = 0;
      for (let position = 0; position < order.length; position += 1) {
        const edgeUsage = usage[order[position]! * size + order[(position + 1) % order.length]!]!;
        maximumUsage = Math.max(maximumUsage, edgeUsage);
        totalUsage += edgeUsage;
      }
      if (
        maximumUsage < bestMaximumUsage ||
        (maximumUsage === bestMaximumUsage &&
          (totalUsage < bestTotalUsage ||
            (totalUsage === bestTotalUsage && compareScores(score, candidates[bestIndex]!.score) > 0)))
      ) {
        bestIndex = index;
        bestMaximumUsage = maximumUsage;
        bestTotalUsage = totalUsage;
      }
    }
    const [{ order }] = candidates.splice(bestIndex, 1) as [ScoredRing];
    for (let position = 0; position < order.length; position += 1) {
      const from = order[position]!;
      const to = order[(position + 1) % order.length]!;
      usage[from * size + to] += 1;
      usage[to * size + from] += 1;
    }
    selected.push(order);
  }
  return selected;
}

/**
 * Up to `maximum` edge-diverse ring orders over `topology`, best first (the reference's
 * `best_ring_orders`, which feeds one ring per GX1_RING_CHANNELS channel). Up to
 * EXACT_RING_SEARCH_MAX_RANKS ranks every closed ring is a candidate; beyond, the candidates are
 * the greedy nearest-neighbour rings from every start rank, so the first order is not always
 * the optimum there. Fails when the topology has no closed ring.
 */
export function bestRingOrders(topology: CollectiveTopology, maximum: number): number[][] {
  if (!Number.isInteger(maximum) || maximum < 0) {
    throw new ConfigurationError(`ring order count ${maximum} must be a non-negative integer`);
  }
  if (maximum === 0) return [];
  if (topology.worldSize === 1) return [[0]];
  const table = edgeTable(topology);
  const candidates = table.size <= EXACT_RING_SEARCH_MAX_RANKS ? allRings(table) : greedyRings(table);
  candidates.sort((left, right) => compareOrders(left.order, right.order));
  return selectDiverseRings(table, candidates, maximum);
}

/** The rank order for ring collectives over `topology`: the first of `bestRingOrders`. */
export function bestRingOrder(topology: CollectiveTopology): number[] {
  return bestRingOrders(topology, 1)[0]!;
}

/**
 * The figures `bestRingOrder` judges the ring `order` (a permutation of the ranks) by. Fails, as
 * the reference's ring score does, on an order that is no ring of the world or an edge without
 * a link.
 */
export function ringMetrics(topology: CollectiveTopology, order: readonly number[]): RingMetrics {
  validateRingOrder(topology.worldSize, order);
  // A single rank's ring has no edges: nothing limits it and nothing delays it.
  if (order.length === 1) {
    return { bottleneckMbps: Number.POSITIVE_INFINITY, totalBandwidthMbps: 0, latencyNs: 0 };
  }
  const table = edgeTable(topology);
  const missing = missingEdge(table, order);
  if (missing !== undefined) {
    throw new ConfigurationError(`invalid collective ring: ring edge ${missing[0]}-${missing[1]} is not connected`);
  }
  const score = scoreRing(table, order);
  return {
    bottleneckMbps: score.bottleneck,
    totalBandwidthMbps: Number(score.totalBandwidth),
    latencyNs: Number(score.totalLatency),
  };
}
