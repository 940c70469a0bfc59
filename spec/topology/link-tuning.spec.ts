/**
 * GX1_TOPOLOGY_RAIL_LINKS, GX1_TOPOLOGY_AGGREGATE_LINKS, GX1_RAIL_ORDER, GX1_DIRECT_BANDWIDTH_MBPS
 * and GX1_DIRECT_LATENCY_NS as the reference reads them (its syntax, checks in its order, its
 * texts), and what they change: the rail each piece takes on the JS plane, the planner's estimates.
 */
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { refusal } from '../helpers/refusal.js';
import { ringAllReduce } from '../../lib/collectives/all-reduce/ring.js';
import { estimateCollective } from '../../lib/collectives/cost-model.js';
import { runScheduled } from '../../lib/collectives/run-scheduled.js';
import { resolveTuning } from '../../lib/collectives/tuning.js';
import { viewTensor } from '../../lib/tensor.js';
import { memoryJob } from '../../lib/testing/index.js';
import { parseAggregateLinks, parseRailLinks, parseRailOrder, preferredRailOrder } from '../../lib/topology/link-tuning.js';
import { parseTopologyLinks } from '../../lib/topology/ring-tuning.js';
import { openRejections, startCoordinator } from '../helpers/job.js';

describe('multi-rail tuning variables', () => {
  it('GX1_TOPOLOGY_RAIL_LINKS: RAIL@A-B:MBps:ns, both directions, blank entries skipped; the reference texts', () => {
    expect(parseRailLinks(3, 2, ' 0@0-1:100000:100, ,1@ 1 - 2 :25000:900')).toEqual([
      { rail: 0, source: 0, destination: 1, bandwidthMbps: 100000, latencyNs: 100 },
      { rail: 0, source: 1, destination: 0, bandwidthMbps: 100000, latencyNs: 100 },
      { rail: 1, source: 1, destination: 2, bandwidthMbps: 25000, latencyNs: 900 },
      { rail: 1, source: 2, destination: 1, bandwidthMbps: 25000, latencyNs: 900 },
    ]);
    const links = (value: string) => refusal(() => parseRailLinks(3, 2, value));
    expect(links('2@0-1:10:10')).toBe('invalid GX1_TOPOLOGY_RAIL_LINKS value "2@0-1:10:10"');
    expect(links('0-1:10:10')).toBe('invalid GX1_TOPOLOGY_RAIL_LINKS value "0-1:10:10"');
    expect(links('0@0-1:10')).toBe('invalid GX1_TOPOLOGY_RAIL_LINKS value "0@0-1:10"');
    expect(links('0@0-3:10:10')).toBe('topology rank 3 is outside world size 3');
    expect(links('0@1-1:10:10')).toBe('topology rank 1 links to itself');
    expect(links('1@0-1:0:10')).toBe('topology link 0-1 has zero bandwidth');
  });

  it('GX1_TOPOLOGY_AGGREGATE_LINKS: A-B:MBps; the reference texts', () => {
    expect(parseAggregateLinks(2, '0-1:150000')).toEqual([
      { source: 0, destination: 1, bandwidthMbps: 150000 },
      { source: 1, destination: 0, bandwidthMbps: 150000 },
    ]);
    expect(refusal(() => parseAggregateLinks(2, '0-1:0'))).toBe('topology link 0-1 has zero bandwidth');
    expect(refusal(() => parseAggregateLinks(2, '0-1:5:5'))).toBe('invalid GX1_TOPOLOGY_AGGREGATE_LINKS value "0-1:5:5"');
    expect(refusal(() => parseAggregateLinks(2, '0-2:5'))).toBe('topology rank 2 is outside world size 2');
  });

  it('GX1_RAIL_ORDER: auto or every rail once; the reference texts, in its order', () => {
    expect(parseRailOrder(2, ' Auto ')).toBe('auto');
    expect(parseRailOrder(3, ' 2, 0 ,1')).toEqual([2, 0, 1]);
    expect(refusal(() => parseRailOrder(2, '0,,1'))).toBe('invalid GX1_RAIL_ORDER value "0,,1"');
    expect(refusal(() => parseRailOrder(2, '0'))).toBe('invalid collective rail order: contains 1 rails, expected 2');
    expect(refusal(() => parseRailOrder(2, '0,2'))).toBe('invalid collective rail order: rail 2 is outside configured rail count 2');
    expect(refusal(() => parseRailOrder(2, '1,1'))).toBe('invalid collective rail order: rail 1 appears more than once');
  });

  it('GX1_DIRECT_BANDWIDTH_MBPS above zero, GX1_DIRECT_LATENCY_NS any, neither trimmed; an option is named as itself', () => {
    const direct = (options: object, env: Record<string, string>) => refusal(() => resolveTuning(options, 2, env));
    expect(resolveTuning({}, 2, { GX1_DIRECT_BANDWIDTH_MBPS: '+9000', GX1_DIRECT_LATENCY_NS: '0' })).toMatchObject({ directBandwidthMbps: 9000, directLatencyNs: 0 });
    expect(direct({}, { GX1_DIRECT_BANDWIDTH_MBPS: '000' })).toBe('invalid GX1_DIRECT_BANDWIDTH_MBPS value "0"');
    expect(direct({}, { GX1_DIRECT_BANDWIDTH_MBPS: ' 9' })).toBe('invalid GX1_DIRECT_BANDWIDTH_MBPS value " 9"');
    expect(direct({}, { GX1_DIRECT_LATENCY_NS: '1.5' })).toBe('invalid GX1_DIRECT_LATENCY_NS value "1.5"');
    expect(direct({ directBandwidthMbps: 0 }, { GX1_DIRECT_BANDWIDTH_MBPS: '5' })).toBe('invalid directBandwidthMbps value "0"');
  });

  it('rail links join the topology (on the reference uniform links where none are declared); auto puts the best rail first', () => {
    const tuning = resolveTuning({}, 2, { GX1_TOPOLOGY_RAIL_LINKS: '0@0-1:100:9000,1@0-1:5000:100' }, 2);
    const topology = tuning.topology;
    if (!(topology && typeof topology === 'object')) throw new Error('no topology');
    expect(topology.rails).toBe(2);
    expect(topology.link(0, 1)).toMatchObject({ bandwidthMbps: 32000, latencyNs: 1000 });
    expect(topology.railLink(1, 0, 1)).toMatchObject({ bandwidthMbps: 5000 });
    expect(preferredRailOrder(topology, 2)).toEqual([1, 0]);
    expect(refusal(() => resolveTuning({}, 2, { GX1_TOPOLOGY_RAIL_LINKS: '1@0-1:5:5' }, 1))).toBe('invalid GX1_TOPOLOGY_RAIL_LINKS value "1@0-1:5:5"');
  });

  it('the planner weighs every rail of a link, capped by its aggregate link, and the direct figures', () => {
    const base = { worldSize: 2, bytes: 1 << 24, groups: null, ringOrder: [0, 1], tuning: { ringChannels: 1, directBandwidthMbps: 32000, directLatencyNs: 1000 } };
    const one = parseTopologyLinks(2, '0-1:1000:10');
    const two = one.withRailLinks(2, [], []);
    const capped = one.withRailLinks(2, [], parseAggregateLinks(2, '0-1:1500'));
    const peer = (topology: typeof one) => estimateCollective('allReduce', { ...base, topology }).peer!;
    expect(peer(two)).toBeLessThan(peer(one) * 0.55);
    expect(peer(capped)).toBeGreaterThan(peer(two));
    expect(peer(capped)).toBeLessThan(peer(one));
    const direct = (directBandwidthMbps: number) => estimateCollective('allReduce', { ...base, topology: one, tuning: { ...base.tuning, directBandwidthMbps } }).direct;
    expect(direct(16000)).toBeGreaterThan(direct(32000) * 1.9);
  });

  it('GX1_RAIL_ORDER moves pieces to its rails (JS plane)', async () => {
    const railsOf = async (railOrder?: number[]) => {
      const { ranks, traffic } = memoryJob(2, { rails: 2, pieceBytes: 16, ...(railOrder === undefined ? {} : { railOrder }) });
      const view = () => viewTensor(new Float32Array(16).fill(1));
      await Promise.all(ranks.map(({ links, context }) => lastValueFrom(runScheduled('allReduce', 'ring', ringAllReduce, 'js', links, { view: view(), op: 'sum' }, context))));
      return traffic.messages.filter((message) => message.from === 0 && message.tag >> 48n === 0x5247n).map((message) => message.rail);
    };
    const plain = await railsOf();
    expect(plain.length).toBeGreaterThan(1);
    expect(await railsOf([1, 0])).toEqual(plain.map((rail) => 1 - rail));
  });

  it('ranks with different rail orders are told apart at open, every rank naming both orders (docs/protocol.md 8.3, step 3)', async () => {
    const job = await startCoordinator(2, { transport: 'tcp_peer', rails: 2, timeoutMs: 10_000 });
    try {
      const errors = await openRejections(job, (rank) => ({ dataPlane: 'js', ...(rank === 1 ? { railOrder: '1,0' } : {}) }));
      for (const error of errors) expect(error).toMatchObject({ code: 'SETTINGS_DIFFER', message: 'GX1_RAIL_ORDER differs: rank 0 has auto (the default), rank 1 has 1,0; every rank must choose collectives alike' });
    } finally {
      await job.dispose();
    }
  });
});
