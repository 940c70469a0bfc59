import { ConfigurationError } from '../errors.js';
import type { CollectiveTopology } from './collective-topology.js';

/**
 * Choosing the rank order of a ring collective. A ring moves every byte over every edge, so
 * its speed is set by the slowest edge (the bottleneck); among rings with the same bottleneck
 * the one with the least total latency finishes small messages soonest. Every rank runs this on
 * the identical topology and must reach the identical order without talking, so the search is
 * deterministic: no randomness, no time limits, and ties go to the lexicographically smallest
 * order (every order starts at rank 0; a ring has no other start).
 */

/** Up to this many ranks the search is exhaustive: 8! orders, a few milliseconds. */
export const EXACT_RING_SEARCH_MAX_RANKS = 9;

/** Bounds the heuristic's work on very large worlds; each pass is O(n^2). */
const MAX_TWO_OPT_PASSES = 256;

/** The figures a ring order is judged by. */
export interface RingMetrics {
  /** The smallest edge bandwidth around the ring, MB/s (infinite for a single rank). */
  readonly bottleneckMbps: number;
  /** The sum of edge latencies around the ring, ns, added in ring order from rank 0. */
  readonly latencyNs: number;
}

/** Dense edge tables, so the searches never touch a Map. */
interface EdgeTable {
  readonly size: number;
  readonly bandwidth: Float64Array;
  readonly latency: Float64Array;
}

/**
 * Reads the edge costs of a complete topology. An edge uses the concurrent-rail aggregate
 * bandwidth where the topology has one: a ring collective stripes each step over every rail at
 * once, so the aggregate is the rate it actually gets. Without an aggregate (one rail, or a
 * topology that omits it) the link bandwidth is used, which is the slowest single rail and so
 * never overstates the edge. Latency is the link's, the slowest rail's.
 */
function edgeTable(topology: CollectiveTopology): EdgeTable {
  const size = topology.worldSize;
  const bandwidth = new Float64Array(size * size);
  const latency = new Float64Array(size * size);
  for (let source = 0; source < size; source += 1) {
    for (let destination = 0; destination < size; destination += 1) {
      if (source === destination) continue;
      const link = topology.link(source, destination);
      if (link === undefined) {
        throw new ConfigurationError(
          `best ring order needs a complete topology; link ${source}->${destination} is missing`,
        );
      }
      const aggregate = topology.aggregateLink(source, destination);
      bandwidth[source * size + destination] = aggregate?.bandwidthMbps ?? link.bandwidthMbps;
      latency[source * size + destination] = link.latencyNs;
    }
  }
  return { size, bandwidth, latency };
}

function metricsOf(table: EdgeTable, order: readonly number[]): RingMetrics {
  // A single rank's ring has no edges: nothing limits it and nothing delays it.
  if (order.length < 2) return { bottleneckMbps: Number.POSITIVE_INFINITY, latencyNs: 0 };
  let bottleneckMbps = Number.POSITIVE_INFINITY;
  let latencyNs = 0;
  for (let index = 0; index < order.length; index += 1) {
    const edge = order[index]! * table.size + order[(index + 1) % order.length]!;
    bottleneckMbps = Math.min(bottleneckMbps, table.bandwidth[edge]!);
    latencyNs += table.latency[edge]!;
  }
  return { bottleneckMbps, latencyNs };
}

/** Whether `left` is a strictly better ring than `right` (ignoring the order tie-break). */
function better(left: RingMetrics, right: RingMetrics): boolean {
  return (
    left.bottleneckMbps > right.bottleneckMbps ||
    (left.bottleneckMbps === right.bottleneckMbps && left.latencyNs < right.latencyNs)
  );
}

function compareOrders(left: readonly number[], right: readonly number[]): number {
  for (let index = 0; index < left.length; index += 1) {
    const difference = left[index]! - right[index]!;
    if (difference !== 0) return difference;
  }
  return 0;
}

/** The better of two orders: metrics first, then the lexicographically smaller order. */
function preferred(table: EdgeTable, left: number[], right: number[]): number[] {
  const leftMetrics = metricsOf(table, left);
  const rightMetrics = metricsOf(table, right);
  if (better(leftMetrics, rightMetrics)) return left;
  if (better(rightMetrics, leftMetrics)) return right;
  return compareOrders(left, right) <= 0 ? left : right;
}

/**
 * The bottleneck bandwidth and total latency of the ring `order` (a permutation of the ranks)
 * over `topology`, with the same edge costs `bestRingOrder` optimises.
 */
export function ringMetrics(topology: CollectiveTopology, order: readonly number[]): RingMetrics {
  const sorted = [...order].sort((left, right) => left - right);
  if (sorted.length !== topology.worldSize || sorted.some((rank, index) => rank !== index)) {
    throw new ConfigurationError(
      `ring order [${order.join(', ')}] is not a permutation of ranks 0..${topology.worldSize}`,
    );
  }
  return metricsOf(edgeTable(topology), order);
}

/**
 * Branch and bound over every order that starts at rank 0, visited in lexicographic order.
 * Only a strictly better ring replaces the best so far, so the first optimum found, the
 * lexicographically smallest, is kept. A prefix is abandoned once it is strictly worse than the
 * best: its bottleneck can only fall and its latency only grow as edges are added.
 */
function exactRingOrder(table: EdgeTable): number[] {
  const { size, bandwidth, latency } = table;
  const order = [0];
  const used = new Uint8Array(size);
  used[0] = 1;
  let best: number[] = [];
  let bestBottleneck = Number.NEGATIVE_INFINITY;
  let bestLatency = Number.POSITIVE_INFINITY;

  const extend = (last: number, bottleneck: number, total: number): void => {
    if (order.length === size) {
      const closing = last * size;
      const ringBottleneck = Math.min(bottleneck, bandwidth[closing]!);
      const ringLatency = total + latency[closing]!;
      if (
        ringBottleneck > bestBottleneck ||
        (ringBottleneck === bestBottleneck && ringLatency < bestLatency)
      ) {
        best = [...order];
        bestBottleneck = ringBottleneck;
        bestLatency = ringLatency;
      }
      return;
    }
    for (let next = 1; next < size; next += 1) {
      if (used[next]) continue;
      const edge = last * size + next;
      const nextBottleneck = Math.min(bottleneck, bandwidth[edge]!);
      const nextTotal = total + latency[edge]!;
      if (nextBottleneck < bestBottleneck) continue;
      if (nextBottleneck === bestBottleneck && nextTotal > bestLatency) continue;
      used[next] = 1;
      order.push(next);
      extend(next, nextBottleneck, nextTotal);
      order.pop();
      used[next] = 0;
    }
  };
  extend(0, Number.POSITIVE_INFINITY, 0);
  return best;
}

/** Nearest neighbour from rank 0: the widest edge next, then the quickest, then the lowest rank. */
function greedyRingOrder(table: EdgeTable): number[] {
  const { size, bandwidth, latency } = table;
  const order = [0];
  const used = new Uint8Array(size);
  used[0] = 1;
  for (let step = 1; step < size; step += 1) {
    const last = order[order.length - 1]!;
    let chosen = -1;
    for (let next = 1; next < size; next += 1) {
      if (used[next]) continue;
      const edge = last * size + next;
      const current = last * size + chosen;
      if (
        chosen < 0 ||
        bandwidth[edge]! > bandwidth[current]! ||
        (bandwidth[edge]! === bandwidth[current]! && latency[edge]! < latency[current]!)
      ) {
        chosen = next;
      }
    }
    used[chosen] = 1;
    order.push(chosen);
  }
  return order;
}

/**
 * Improves `start` with 2-opt moves: reversing a segment order[i..j] (1 <= i < j, so rank 0
 * stays first). Each pass evaluates every move in O(1) from prefix minima and prefix sums (a
 * reversed segment runs its edges backwards, which matters on asymmetric links) and applies the
 * best strictly improving one, the first found on ties; it stops when no move improves or after
 * MAX_TWO_OPT_PASSES passes.
 */
function twoOptRingOrder(table: EdgeTable, start: number[]): number[] {
  const { size, bandwidth, latency } = table;
  const order = [...start];
  const forwardBandwidth = new Float64Array(size);
  const reverseBandwidth = new Float64Array(size);
  const forwardLatencyPrefix = new Float64Array(size + 1);
  const reverseLatencyPrefix = new Float64Array(size + 1);
  const forwardMinPrefix = new Float64Array(size + 1);
  const forwardMinSuffix = new Float64Array(size + 1);

  for (let pass = 0; pass < MAX_TWO_OPT_PASSES; pass += 1) {
    // Edge k runs order[k] -> order[k + 1] (the last edge closes the ring back to rank 0).
    forwardMinPrefix[0] = Number.POSITIVE_INFINITY;
    for (let k = 0; k < size; k += 1) {
      const from = order[k]!;
      const to = order[(k + 1) % size]!;
      forwardBandwidth[k] = bandwidth[from * size + to]!;
      reverseBandwidth[k] = bandwidth[to * size + from]!;
      forwardLatencyPrefix[k + 1] = forwardLatencyPrefix[k]! + latency[from * size + to]!;
      reverseLatencyPrefix[k + 1] = reverseLatencyPrefix[k]! + latency[to * size + from]!;
      forwardMinPrefix[k + 1] = Math.min(forwardMinPrefix[k]!, forwardBandwidth[k]!);
    }
    forwardMinSuffix[size] = Number.POSITIVE_INFINITY;
    for (let k = size - 1; k >= 0; k -= 1) {
      forwardMinSuffix[k] = Math.min(forwardMinSuffix[k + 1]!, forwardBandwidth[k]!);
    }
    let bestMetrics = metricsOf(table, order);
    const totalLatency = bestMetrics.latencyNs;
    let bestMove: [number, number] | undefined;

    for (let i = 1; i < size - 1; i += 1) {
      const before = order[i - 1]!;
      const first = order[i]!;
      let reversedMin = Number.POSITIVE_INFINITY;
      for (let j = i + 1; j < size; j += 1) {
        // Edges i..j-1 now run backwards; edges i-1 and j are replaced by
        // before -> order[j] and order[i] -> after.
        reversedMin = Math.min(reversedMin, reverseBandwidth[j - 1]!);
        const last = order[j]!;
        const after = order[(j + 1) % size]!;
        const bottleneckMbps = Math.min(
          forwardMinPrefix[i - 1]!,
          forwardMinSuffix[j + 1]!,
          reversedMin,
          bandwidth[before * size + last]!,
          bandwidth[first * size + after]!,
        );
        const latencyNs =
          totalLatency -
          (forwardLatencyPrefix[j + 1]! - forwardLatencyPrefix[i - 1]!) +
          (reverseLatencyPrefix[j]! - reverseLatencyPrefix[i]!) +
          latency[before * size + last]! +
          latency[first * size + after]!;
        const candidate = { bottleneckMbps, latencyNs };
        if (better(candidate, bestMetrics)) {
          bestMetrics = candidate;
          bestMove = [i, j];
        }
      }
    }
    if (bestMove === undefined) break;
    const [i, j] = bestMove;
    order.splice(i, j - i + 1, ...order.slice(i, j + 1).reverse());
  }
  return order;
}

/**
 * The rank order for ring collectives over `topology` (which must be complete): the ring with
 * the widest bottleneck, then the least total latency, then the lexicographically smallest
 * order, always starting at rank 0.
 *
 * Up to EXACT_RING_SEARCH_MAX_RANKS ranks the answer is exact. Beyond, it is a heuristic: the
 * better of rank order and a greedy nearest-neighbour ring, improved by 2-opt. It is still
 * deterministic and never worse than rank order 0, 1, ..., n-1, but not always optimal, and its
 * ties need not be broken towards the smallest order.
 */
export function bestRingOrder(topology: CollectiveTopology): number[] {
  const table = edgeTable(topology);
  const rankOrder = Array.from({ length: table.size }, (_, rank) => rank);
  // Below three ranks there is only one ring.
  if (table.size < 3) return rankOrder;
  if (table.size <= EXACT_RING_SEARCH_MAX_RANKS) return exactRingOrder(table);
  const start = preferred(table, rankOrder, greedyRingOrder(table));
  // Floating-point sums on huge latencies could let 2-opt drift; rank order is the safety net.
  return preferred(table, rankOrder, twoOptRingOrder(table, start));
}
