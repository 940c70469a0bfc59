import { ConfigurationError } from '../errors.js';
import { ANY_RANK } from '../protocol/constants.js';

/**
 * The measured (or declared) cost of sending from `source` to `destination`. Links are directed:
 * the probe records the same conservative value on both ordered pairs of a rank pair, but a
 * hand-written topology may describe asymmetric links. Metrics are positive integers, as the
 * reference's u64 fields; probed values are power-of-four buckets (see probe-buckets.ts).
 */
export interface TopologyLink {
  readonly source: number;
  readonly destination: number;
  /** Megabytes per second (bytes per microsecond), as the reference computes it. */
  readonly bandwidthMbps: number;
  readonly latencyNs: number;
}

/** One point-to-point rail of a link, measured alone. */
export interface TopologyRailLink extends TopologyLink {
  readonly rail: number;
}

/** The bandwidth of a link when every rail carries data at once (multi-rail striping). */
export interface TopologyAggregateLink {
  readonly source: number;
  readonly destination: number;
  readonly bandwidthMbps: number;
}

/** What a topology is made of; absent lists are empty and `rails` defaults to 1. */
export interface CollectiveTopologyInit {
  readonly worldSize: number;
  readonly rails?: number;
  readonly links?: readonly TopologyLink[];
  readonly railLinks?: readonly TopologyRailLink[];
  readonly aggregateLinks?: readonly TopologyAggregateLink[];
}

/** The plain-data form `toJSON()` writes and `fromJSON()` reads; lists in canonical order. */
export interface CollectiveTopologyJson {
  worldSize: number;
  rails: number;
  links: TopologyLink[];
  railLinks: TopologyRailLink[];
  aggregateLinks: TopologyAggregateLink[];
}

/** The reference's uniform link (DEFAULT_BANDWIDTH_MBPS, DEFAULT_LATENCY_NS of src/rank/topology.rs). */
export const UNIFORM_BANDWIDTH_MBPS = 32_000;
export const UNIFORM_LATENCY_NS = 1_000;

/** Ranks are u32 on the wire and ANY_RANK is reserved, so a world holds at most ANY_RANK ranks. */
const MAX_WORLD_SIZE = ANY_RANK;

function pairKey(source: number, destination: number): string {
  return `${source}->${destination}`;
}

function railKey(source: number, destination: number, rail: number): string {
  return `${source}->${destination}@${rail}`;
}

function describeLink(link: TopologyLink): string {
  return `link ${pairKey(link.source, link.destination)}`;
}

function describeRailLink(link: TopologyRailLink): string {
  return `rail link ${pairKey(link.source, link.destination)} on rail ${link.rail}`;
}

function describeAggregateLink(link: TopologyAggregateLink): string {
  return `aggregate link ${pairKey(link.source, link.destination)}`;
}

function checkEndpoints(what: string, source: number, destination: number, worldSize: number): void {
  for (const [role, rank] of [
    ['source', source],
    ['destination', destination],
  ] as const) {
    if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize) {
      throw new ConfigurationError(
        `topology ${what} names ${role} rank ${rank} outside world size ${worldSize}`,
      );
    }
  }
  if (source === destination) {
    throw new ConfigurationError(`topology ${what} connects rank ${source} to itself`);
  }
}

function checkMetric(what: string, field: string, value: number): void {
  if (!Number.isInteger(value) || value <= 0) {
    throw new ConfigurationError(`topology ${what} ${field} ${value} must be a positive integer`);
  }
}

/** Orders by source, then destination, then rail: the canonical order of every link list. */
function compareLinks(
  left: { source: number; destination: number; rail?: number },
  right: { source: number; destination: number; rail?: number },
): number {
  return (
    left.source - right.source ||
    left.destination - right.destination ||
    (left.rail ?? 0) - (right.rail ?? 0)
  );
}

/**
 * Indexes `entries` by key after validating each, rejecting a second entry with the same key.
 * The stored copies are frozen plain objects holding only the known fields.
 */
function indexLinks<T>(
  entries: readonly T[],
  describe: (entry: T) => string,
  validate: (entry: T, what: string) => T,
  key: (entry: T) => string,
): Map<string, T> {
  const index = new Map<string, T>();
  for (const entry of entries) {
    const what = describe(entry);
    const copy = Object.freeze(validate(entry, what));
    const entryKey = key(copy);
    if (index.has(entryKey)) throw new ConfigurationError(`topology ${what} is listed twice`);
    index.set(entryKey, copy);
  }
  return index;
}

/**
 * The link table collectives plan with: per ordered rank pair a conservative bandwidth and
 * latency, optionally per rail and as a concurrent-rail aggregate. Immutable and validated on
 * construction, so every consumer can trust ranks, rails and metrics; its JSON form is canonical
 * (sorted), so two ranks holding equal topologies serialise them identically.
 */
export class CollectiveTopology {
  readonly worldSize: number;
  readonly rails: number;
  /** Sorted by source, then destination. */
  readonly links: readonly TopologyLink[];
  /** Sorted by source, destination, then rail. */
  readonly railLinks: readonly TopologyRailLink[];
  /** Sorted by source, then destination. */
  readonly aggregateLinks: readonly TopologyAggregateLink[];
  private readonly linkIndex: ReadonlyMap<string, TopologyLink>;
  private readonly railLinkIndex: ReadonlyMap<string, TopologyRailLink>;
  private readonly aggregateLinkIndex: ReadonlyMap<string, TopologyAggregateLink>;

  constructor(init: CollectiveTopologyInit) {
    const { worldSize, rails = 1 } = init;
    if (!Number.isInteger(worldSize) || worldSize < 1 || worldSize > MAX_WORLD_SIZE) {
      throw new ConfigurationError(
        `collective topology world size ${worldSize} is outside 1..=${MAX_WORLD_SIZE}`,
      );
    }
    if (!Number.isInteger(rails) || rails < 1) {
      throw new ConfigurationError(`collective topology rail count ${rails} must be a positive integer`);
    }
    this.worldSize = worldSize;
    this.rails = rails;

    const validateLink = (link: TopologyLink, what: string): TopologyLink => {
      checkEndpoints(what, link.source, link.destination, worldSize);
      checkMetric(what, 'bandwidth Mbps', link.bandwidthMbps);
      checkMetric(what, 'latency ns', link.latencyNs);
      const { source, destination, bandwidthMbps, latencyNs } = link;
      return { source, destination, bandwidthMbps, latencyNs };
    };
    this.linkIndex = indexLinks(init.links ?? [], describeLink, validateLink, (link) =>
      pairKey(link.source, link.destination),
    );
    this.railLinkIndex = indexLinks(
      init.railLinks ?? [],
      describeRailLink,
      (link, what) => {
        if (!Number.isInteger(link.rail) || link.rail < 0 || link.rail >= rails) {
          throw new ConfigurationError(`topology ${what} names a rail outside 0..${rails}`);
        }
        return { ...validateLink(link, what), rail: link.rail };
      },
      (link) => railKey(link.source, link.destination, link.rail),
    );
    this.aggregateLinkIndex = indexLinks(
      init.aggregateLinks ?? [],
      describeAggregateLink,
      (link, what) => {
        checkEndpoints(what, link.source, link.destination, worldSize);
        checkMetric(what, 'bandwidth Mbps', link.bandwidthMbps);
        const { source, destination, bandwidthMbps } = link;
        return { source, destination, bandwidthMbps };
      },
      (link) => pairKey(link.source, link.destination),
    );
    this.links = Object.freeze([...this.linkIndex.values()].sort(compareLinks));
    this.railLinks = Object.freeze([...this.railLinkIndex.values()].sort(compareLinks));
    this.aggregateLinks = Object.freeze([...this.aggregateLinkIndex.values()].sort(compareLinks));
  }

  /**
   * The reference's default topology (`CollectiveTopology::uniform`): every pair of ranks linked
   * at 32000 MB/s and 1000 ns, what its planner assumes where no links are declared or probed.
   */
  static uniform(worldSize: number, rails = 1): CollectiveTopology {
    const ranks = Array.from({ length: worldSize }, (_, rank) => rank);
    const links = ranks.flatMap((source) =>
      ranks.filter((destination) => destination !== source).map((destination) => ({ source, destination, bandwidthMbps: UNIFORM_BANDWIDTH_MBPS, latencyNs: UNIFORM_LATENCY_NS })),
    );
    return new CollectiveTopology({ worldSize, rails, links });
  }

  /** This topology with `rails` rails and these rail and aggregate links added (replacing any it had for the same pair). */
  withRailLinks(rails: number, railLinks: readonly TopologyRailLink[], aggregateLinks: readonly TopologyAggregateLink[]): CollectiveTopology {
    const keep = <T extends { source: number; destination: number; rail?: number }>(mine: readonly T[], added: readonly T[]) =>
      [...mine.filter((link) => !added.some((other) => other.source === link.source && other.destination === link.destination && other.rail === link.rail)), ...added];
    return new CollectiveTopology({
      worldSize: this.worldSize,
      rails,
      links: this.links,
      railLinks: keep(this.railLinks, railLinks),
      aggregateLinks: keep(this.aggregateLinks, aggregateLinks),
    });
  }

  /** Reads the `toJSON()` form (e.g. after `JSON.parse`), checking types before meaning. */
  static fromJSON(value: unknown): CollectiveTopology {
    const where = 'collective topology JSON';
    const json = asRecord(value, where);
    const list = <T>(field: string, read: (entry: Record<string, unknown>, at: string) => T): T[] => {
      const entries = json[field];
      if (entries === undefined) return [];
      if (!Array.isArray(entries)) {
        throw new ConfigurationError(`${where} field "${field}" must be an array`);
      }
      return entries.map((entry, index) => {
        const at = `${where} ${field}[${index}]`;
        return read(asRecord(entry, at), at);
      });
    };
    const readLink = (entry: Record<string, unknown>, at: string): TopologyLink => ({
      source: readNumber(entry, 'source', at),
      destination: readNumber(entry, 'destination', at),
      bandwidthMbps: readNumber(entry, 'bandwidthMbps', at),
      latencyNs: readNumber(entry, 'latencyNs', at),
    });
    return new CollectiveTopology({
      worldSize: readNumber(json, 'worldSize', where),
      rails: json.rails === undefined ? 1 : readNumber(json, 'rails', where),
      links: list('links', readLink),
      railLinks: list('railLinks', (entry, at) => ({
        ...readLink(entry, at),
        rail: readNumber(entry, 'rail', at),
      })),
      aggregateLinks: list('aggregateLinks', (entry, at) => ({
        source: readNumber(entry, 'source', at),
        destination: readNumber(entry, 'destination', at),
        bandwidthMbps: readNumber(entry, 'bandwidthMbps', at),
      })),
    });
  }

  /** The link from `source` to `destination`, if the topology has one. */
  link(source: number, destination: number): TopologyLink | undefined {
    return this.linkIndex.get(pairKey(source, destination));
  }

  railLink(source: number, destination: number, rail: number): TopologyRailLink | undefined {
    return this.railLinkIndex.get(railKey(source, destination, rail));
  }

  aggregateLink(source: number, destination: number): TopologyAggregateLink | undefined {
    return this.aggregateLinkIndex.get(pairKey(source, destination));
  }

  /** Whether every ordered pair of distinct ranks has a link (a world of one always does). */
  isComplete(): boolean {
    // Links are unique, in range and never self links, so counting them is enough.
    return this.links.length === this.worldSize * (this.worldSize - 1);
  }

  toJSON(): CollectiveTopologyJson {
    return {
      worldSize: this.worldSize,
      rails: this.rails,
      links: this.links.map((link) => ({ ...link })),
      railLinks: this.railLinks.map((link) => ({ ...link })),
      aggregateLinks: this.aggregateLinks.map((link) => ({ ...link })),
    };
  }
}

function asRecord(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(`${where} must be an object`);
  }
  return value as Record<string, unknown>;
}

function readNumber(record: Record<string, unknown>, field: string, where: string): number {
  const value = record[field];
  if (typeof value !== 'number') {
    throw new ConfigurationError(`${where} field "${field}" must be a number, got ${JSON.stringify(value)}`);
  }
  return value;
}
