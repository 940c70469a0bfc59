import fc from 'fast-check';
import {
  CollectiveTopology,
  type TopologyAggregateLink,
  type TopologyLink,
  type TopologyRailLink,
} from '../../lib/topology/index.js';

/** A metric as the probe produces them: a power of two (a bucket), at most 2^40. */
export const arbMetric = fc.integer({ min: 0, max: 40 }).map((exponent) => 2 ** exponent);

/** A small metric range, so random rings tie often and tie-breaking gets exercised. */
export const arbCoarseMetric = fc.constantFrom(1, 2, 4);

function orderedPairs(worldSize: number): [number, number][] {
  const pairs: [number, number][] = [];
  for (let source = 0; source < worldSize; source += 1) {
    for (let destination = 0; destination < worldSize; destination += 1) {
      if (source !== destination) pairs.push([source, destination]);
    }
  }
  return pairs;
}

/** A topology with any subset of links, rail links and aggregate links. */
export const arbTopology: fc.Arbitrary<CollectiveTopology> = fc
  .record({ worldSize: fc.integer({ min: 1, max: 6 }), rails: fc.integer({ min: 1, max: 3 }) })
  .chain(({ worldSize, rails }) => {
    const pairs = orderedPairs(worldSize);
    const railPairs = pairs.flatMap(([source, destination]) =>
      Array.from({ length: rails }, (_, rail) => [source, destination, rail] as const),
    );
    const link = ([source, destination]: readonly [number, number]) =>
      fc.record({ bandwidthMbps: arbMetric, latencyNs: arbMetric }).map((metrics): TopologyLink => ({ source, destination, ...metrics }));
    return fc.record({
      worldSize: fc.constant(worldSize),
      rails: fc.constant(rails),
      links: fc.subarray(pairs).chain((chosen) => fc.tuple(...chosen.map(link))),
      railLinks: fc.subarray(railPairs).chain((chosen) =>
        fc.tuple(
          ...chosen.map(([source, destination, rail]) =>
            link([source, destination]).map((entry): TopologyRailLink => ({ ...entry, rail })),
          ),
        ),
      ),
      aggregateLinks: fc.subarray(pairs).chain((chosen) =>
        fc.tuple(
          ...chosen.map(([source, destination]) =>
            arbMetric.map((bandwidthMbps): TopologyAggregateLink => ({ source, destination, bandwidthMbps })),
          ),
        ),
      ),
    });
  })
  .map((init) => new CollectiveTopology(init));

export interface RingTopologyOptions {
  readonly minRanks: number;
  readonly maxRanks: number;
  readonly metric?: fc.Arbitrary<number>;
  /** Whether links may be missing, about one in four (a ring may then not exist); complete otherwise. */
  readonly sparse?: boolean;
  /** Whether every link has an equal reverse, as probed and GX1_TOPOLOGY_LINKS topologies do. */
  readonly symmetric?: boolean;
  /** Whether the generator may add aggregate links (some or all pairs); ring search ignores them. */
  readonly aggregates?: boolean;
}

/** A topology to search rings in; asymmetric links differ, or exist, per direction. */
export function arbRingTopology(options: RingTopologyOptions): fc.Arbitrary<CollectiveTopology> {
  const metric = options.metric ?? arbCoarseMetric;
  const arbLinkMetrics = fc.record({ bandwidthMbps: metric, latencyNs: metric });
  return fc.integer({ min: options.minRanks, max: options.maxRanks }).chain((worldSize) => {
    const pairs = orderedPairs(worldSize);
    const described = options.symmetric ? pairs.filter(([source, destination]) => source < destination) : pairs;
    return fc
      .record({
        metrics: fc.tuple(
          ...described.map(() => (options.sparse ? fc.option(arbLinkMetrics, { freq: 4, nil: undefined }) : arbLinkMetrics)),
        ),
        aggregateLinks: options.aggregates
          ? fc.subarray(pairs).chain((chosen) =>
              fc.tuple(
                ...chosen.map(([source, destination]) =>
                  metric.map((bandwidthMbps): TopologyAggregateLink => ({ source, destination, bandwidthMbps })),
                ),
              ),
            )
          : fc.constant([]),
      })
      .map(({ metrics, aggregateLinks }) => {
        const links = described.flatMap(([source, destination], index): TopologyLink[] => {
          const found = metrics[index];
          if (found === undefined) return [];
          const link = { source, destination, ...found };
          return options.symmetric ? [link, { ...link, source: destination, destination: source }] : [link];
        });
        return new CollectiveTopology({ worldSize, rails: 2, links, aggregateLinks });
      });
  });
}
