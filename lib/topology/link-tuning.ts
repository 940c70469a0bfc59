import { ConfigurationError } from '../errors.js';
import type { CollectiveTopology, TopologyAggregateLink, TopologyRailLink } from './collective-topology.js';
import { invalidEnvironment, isAuto, MAX_U32, parseUnsigned, rankOutOfRange, trimWhitespace } from './environment-values.js';

/**
 * The reference's multi-rail tuning as it arrives in environment variables: per-rail links
 * (GX1_TOPOLOGY_RAIL_LINKS), links' striped bandwidth (GX1_TOPOLOGY_AGGREGATE_LINKS), the order
 * channels take the rails in (GX1_RAIL_ORDER) and the staged path's figures for the planner
 * (GX1_DIRECT_BANDWIDTH_MBPS, GX1_DIRECT_LATENCY_NS). Same syntax, checks and texts as
 * src/rank/topology.rs.
 */

/** The reference's direct transport figures (the staged path, for the planner). */
export const DEFAULT_DIRECT_BANDWIDTH_MBPS = 32_000;
export const DEFAULT_DIRECT_LATENCY_NS = 1_000;

/** The checks of the reference's add_link family, in its order: ranks in range, not a self link, bandwidth above zero. */
function checkLink(worldSize: number, first: number, second: number, bandwidthMbps: number): void {
  for (const rank of [first, second]) if (rank >= worldSize) throw rankOutOfRange(rank, worldSize);
  if (first === second) throw new ConfigurationError(`topology rank ${first} links to itself`);
  if (bandwidthMbps === 0) throw new ConfigurationError(`topology link ${first}-${second} has zero bandwidth`);
}

/** The numbers of a `A-B:...` entry, each trimmed; undefined where one does not parse. */
function readPair(entry: string): { first: number; second: number; rest: string } | undefined {
  const colon = entry.indexOf(':');
  if (colon < 0) return undefined;
  const dash = entry.indexOf('-');
  if (dash < 0 || dash > colon) return undefined;
  const first = parseUnsigned(trimWhitespace(entry.slice(0, dash)), MAX_U32);
  const second = parseUnsigned(trimWhitespace(entry.slice(dash + 1, colon)), MAX_U32);
  return first === undefined || second === undefined ? undefined : { first, second, rest: entry.slice(colon + 1) };
}

/** The entries of a comma list, blank ones skipped. */
function entries(value: string): string[] {
  return value.split(',').filter((entry) => trimWhitespace(entry) !== '');
}

/**
 * Reads GX1_TOPOLOGY_RAIL_LINKS: `RAIL@A-B:MBps:ns` entries (`0@0-1:100000:100,1@0-1:25000:900`),
 * each link on one rail of `rails`, both directions; a rail outside the job's rails is a bad value.
 */
export function parseRailLinks(worldSize: number, rails: number, value: string): TopologyRailLink[] {
  return entries(value).flatMap((entry) => {
    const at = entry.indexOf('@');
    const rail = at < 0 ? undefined : parseUnsigned(trimWhitespace(entry.slice(0, at)));
    const pair = at < 0 ? undefined : readPair(entry.slice(at + 1));
    const [bandwidth, latency, extra] = pair?.rest.split(':') ?? [];
    const bandwidthMbps = bandwidth === undefined ? undefined : parseUnsigned(trimWhitespace(bandwidth));
    const latencyNs = latency === undefined ? undefined : parseUnsigned(trimWhitespace(latency));
    if (rail === undefined || pair === undefined || bandwidthMbps === undefined || latencyNs === undefined || extra !== undefined || rail >= rails) {
      throw invalidEnvironment('GX1_TOPOLOGY_RAIL_LINKS', value);
    }
    checkLink(worldSize, pair.first, pair.second, bandwidthMbps);
    // Our topology holds positive metrics only: a declared 0 ns is 1 ns, as GX1_TOPOLOGY_LINKS's.
    const link = { rail, bandwidthMbps, latencyNs: Math.max(latencyNs, 1) };
    return [
      { ...link, source: pair.first, destination: pair.second },
      { ...link, source: pair.second, destination: pair.first },
    ];
  });
}

/** Reads GX1_TOPOLOGY_AGGREGATE_LINKS: `A-B:MBps` entries, the bandwidth of a pair with every rail at once. */
export function parseAggregateLinks(worldSize: number, value: string): TopologyAggregateLink[] {
  return entries(value).flatMap((entry) => {
    const pair = readPair(entry);
    const bandwidthMbps = pair === undefined || pair.rest.includes(':') ? undefined : parseUnsigned(trimWhitespace(pair.rest));
    if (pair === undefined || bandwidthMbps === undefined) throw invalidEnvironment('GX1_TOPOLOGY_AGGREGATE_LINKS', value);
    checkLink(worldSize, pair.first, pair.second, bandwidthMbps);
    return [
      { source: pair.first, destination: pair.second, bandwidthMbps },
      { source: pair.second, destination: pair.first, bandwidthMbps },
    ];
  });
}

/** Checks a rail order against the job's `rails`, in the reference's order, and returns a copy. */
export function validateRailOrder(rails: number, order: readonly number[]): number[] {
  if (order.length !== rails) throw new ConfigurationError(`invalid collective rail order: contains ${order.length} rails, expected ${rails}`);
  const seen = new Uint8Array(rails);
  for (const rail of order) {
    if (!Number.isInteger(rail) || rail < 0 || rail >= rails) throw new ConfigurationError(`invalid collective rail order: rail ${rail} is outside configured rail count ${rails}`);
    if (seen[rail]) throw new ConfigurationError(`invalid collective rail order: rail ${rail} appears more than once`);
    seen[rail] = 1;
  }
  return [...order];
}

/** Reads GX1_RAIL_ORDER: `auto` (any case, trimmed) or every rail once (`1,0`), each trimmed, no blank entries. */
export function parseRailOrder(rails: number, value: string): number[] | 'auto' {
  if (isAuto(value)) return 'auto';
  const order = value.split(',').map((rail) => {
    const parsed = parseUnsigned(trimWhitespace(rail));
    if (parsed === undefined) throw invalidEnvironment('GX1_RAIL_ORDER', value);
    return parsed;
  });
  return validateRailOrder(rails, order);
}

/**
 * GX1_RAIL_ORDER=auto, as the reference's `preferred_rail_order`: the rails by how good a ring
 * over every pair on that rail alone would be (its slowest link's bandwidth, then the sum of
 * bandwidths, then the least total latency; a pair without a rail link has its ordinary link),
 * best first, ties to the lower rail. Without rail links that is 0, 1, ... in order.
 */
export function preferredRailOrder(topology: CollectiveTopology, rails: number): number[] {
  const { worldSize } = topology;
  const score = (rail: number) => {
    let bottleneck = Infinity;
    let total = 0;
    let latency = 0;
    for (let source = 0; source < worldSize; source++) {
      for (let destination = 0; destination < worldSize; destination++) {
        if (source === destination) continue;
        const link = topology.railLink(source, destination, rail) ?? topology.link(source, destination);
        bottleneck = Math.min(bottleneck, link?.bandwidthMbps ?? 0);
        total += link?.bandwidthMbps ?? 0;
        latency += link?.latencyNs ?? 0;
      }
    }
    return { rail, bottleneck, total, latency };
  };
  return Array.from({ length: rails }, (_, rail) => score(rail))
    .sort((a, b) => b.bottleneck - a.bottleneck || b.total - a.total || a.latency - b.latency || a.rail - b.rail)
    .map(({ rail }) => rail);
}
