import type { CollectiveTopology } from '../topology/collective-topology.js';
import { bestRingOrder, ringMetrics } from '../topology/best-ring-order.js';

const microseconds = (ns: number) => `${(ns / 1_000).toFixed(1)} us`;
const megabytes = (mbps: number) => `${mbps} MB/s`;

/**
 * The table `rxccl probe` prints: latency and bandwidth of every directed link (per rail and all
 * rails at once when there are several), and the ring order collectives would pick.
 */
export function formatTopology(topology: CollectiveTopology): string {
  const rails = Array.from({ length: topology.rails }, (_, rail) => rail);
  const multiRail = topology.rails > 1;
  const header = ['link', 'latency', 'bandwidth', ...(multiRail ? [...rails.map((rail) => `rail ${rail}`), 'all rails'] : [])];
  const rows = topology.links.map(({ source, destination, latencyNs, bandwidthMbps }) => [
    `${source} -> ${destination}`,
    microseconds(latencyNs),
    megabytes(bandwidthMbps),
    ...(multiRail
      ? [
          ...rails.map((rail) => {
            const link = topology.railLink(source, destination, rail);
            return link === undefined ? '-' : megabytes(link.bandwidthMbps);
          }),
          megabytes(topology.aggregateLink(source, destination)?.bandwidthMbps ?? 0),
        ]
      : []),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd();
  const order = bestRingOrder(topology);
  const ring = ringMetrics(topology, order);
  return [
    `topology of ${topology.worldSize} ranks, ${topology.rails} rail${topology.rails === 1 ? '' : 's'} (measured figures are power-of-four buckets)`,
    line(header),
    ...rows.map(line),
    `best ring order: ${[...order, order[0]].join(' -> ')} (bottleneck ${megabytes(ring.bottleneckMbps)}, ring latency ${microseconds(ring.latencyNs)})`,
    '',
  ].join('\n');
}
