/**
 * Scale in simulation (#47 item 6): every scheduled algorithm of the table, built for every rank
 * of N = 256, 1024 and 4096 ranks, measured as data (no links, no timing), against the lower
 * bounds; and the coordinator's frames at join, counted from the wire format (docs/protocol.md
 * 8.1, 8.3; revision 14's run of two entries per rank beside revision 13's whole table), with
 * each rank's part of the endpoint gather.
 *
 *   npx tsx bench/scale/run.ts [--sizes 256,1024,4096] [--json]
 *
 * Per (collective, algorithm, N), for a tensor of `T` = 64 N bytes per rank (f32; a reduce-scatter
 * and an all-to-all cut it into N shards):
 * - msgs/rank: the most messages a rank sends, its schedule's own; then with the native plane's
 *   agreement (`withHeaderExchange`: at most one header of no bytes more, to its successor on the
 *   ring, where the schedule's first message there would wait or is absent; docs/protocol.md 9.9);
 * - steps: dependent steps, the longest chain of messages through receives, folds and sends
 *   across ranks (a message is a step; what a rank computes between two messages is not), against
 *   ceil(log2 N);
 * - sent/T: the most bytes a rank sends, over T, against the collective's bound (all-reduce
 *   2(N-1)/N; reduce-scatter, all-to-all (N-1)/N; all-gather N-1; broadcast and reduce 1 at the
 *   root; gather none per rank but the others' (N-1) at the root; barrier 0);
 * - link/T: the most bytes one directed link carries, over T.
 * Schedules whose rank 0 sends N-1 messages or more (pairwise, all-pairs, rings) are skipped above
 * 1024 ranks: 4096 schedules of 4095 messages each are 16.7 million messages to build, minutes of
 * this host per algorithm, for counts their formulas give (N-1, 2(N-1)) as the 256 and 1024 rows
 * show. The hierarchical rows need topology groups and are left out.
 */
import { parseArgs } from 'node:util';
import type { CollectiveName } from '../../lib/collectives/algorithm.js';
import { withHeaderExchange } from '../../lib/collectives/schedule/header-exchange.js';
import { type Dependency, producersOf, type Schedule, type ScheduleInput, type ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import { ALGORITHMS } from '../../lib/collectives/select.js';
import { FRAME_HEADER_BYTES } from '../../lib/protocol/constants.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { endpointEntriesFrame } from '../../lib/transport/endpoint-entries.js';
import { EndpointGather } from '../../lib/transport/endpoint-gather.js';
import { formatEndpointTable, formatRankEndpoints, type RankEndpoints } from '../../lib/transport/peer-endpoint-config.js';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '256,1024,4096' }, json: { type: 'boolean', default: false } } });
const SIZES = values.sizes.split(',').map(Number);
const WIDTH = 4;
/** Schedules whose rank 0 sends more than LINEAR_SENDS messages (N-1 or 2(N-1): all-pairs per rank) are built up to this many ranks. */
const HEAVY_UP_TO = 1024;
const LINEAR_SENDS = 64;

const ROOTED = new Set<CollectiveName>(['broadcast', 'reduce', 'gather']);
const REDUCING = new Set<CollectiveName>(['allReduce', 'reduce', 'reduceScatter']);

/** The least bytes a rank must send, over T (per rank; the root's for rooted collectives). */
function bandwidthBound(collective: CollectiveName, n: number): number {
  switch (collective) {
    case 'allReduce':
      return (2 * (n - 1)) / n;
    case 'reduceScatter':
    case 'allToAll':
      return (n - 1) / n;
    case 'allGather':
      return n - 1;
    case 'broadcast':
    case 'reduce':
    case 'gather':
      return 1;
    default:
      return 0;
  }
}

interface Row {
  readonly collective: CollectiveName;
  readonly algorithm: string;
  readonly n: number;
  readonly messagesPerRank: number;
  readonly nativeMessagesPerRank: number;
  readonly steps: number;
  readonly stepBound: number;
  readonly sentPerT: number;
  readonly sentBound: number;
  readonly linkPerT: number;
}

/** Every distinct schedule of the table, by collective (one per schedule function). */
function scheduledRows(): { collective: CollectiveName; name: string; schedule: ScheduleOf }[] {
  return (Object.keys(ALGORITHMS) as CollectiveName[]).flatMap((collective) => {
    const seen = new Set<ScheduleOf>();
    return ALGORITHMS[collective].flatMap((row) => {
      if (row.schedule === undefined || seen.has(row.schedule) || row.family === 'hierarchical') return [];
      seen.add(row.schedule);
      return [{ collective, name: row.name, schedule: row.schedule }];
    });
  });
}

/**
 * The longest chain of messages: a send leaves at the step of what it waits for, its receive is
 * done one step later, a fold at the latest of what it waits for. Message k on a link pairs with
 * receive k on it. Every send, receive and fold of every rank is a node, taken in topological
 * order (Kahn's algorithm).
 */
function dependentSteps(schedules: readonly Schedule[]): number {
  // Node ids: per rank its sends, then its receives, then its folds.
  const base: number[] = [];
  let total = 0;
  for (const schedule of schedules) {
    base.push(total);
    total += schedule.sends.length + schedule.receives.length + schedule.folds.length;
  }
  const sendId = (rank: number, index: number) => base[rank]! + index;
  const receiveId = (rank: number, index: number) => base[rank]! + schedules[rank]!.sends.length + index;
  const foldId = (rank: number, index: number) => base[rank]! + schedules[rank]!.sends.length + schedules[rank]!.receives.length + index;
  const idOf = (rank: number, dependency: Dependency) =>
    'receive' in dependency ? receiveId(rank, dependency.receive) : 'fold' in dependency ? foldId(rank, dependency.fold) : sendId(rank, dependency.send);
  const dependents: number[][] = Array.from({ length: total }, () => []);
  const waiting = new Int32Array(total);
  // A receive is one step after its send; anything else at the step of what it waits for.
  const isReceive = new Uint8Array(total);
  // Each rank's receives by the link they come on (`from/rail`), in order.
  const receivesOn = schedules.map(() => new Map<string, number[]>());
  schedules.forEach((schedule, rank) => {
    schedule.receives.forEach((receive, index) => {
      const key = `${receive.peer}/${receive.rail ?? 0}`;
      const on = receivesOn[rank]!;
      (on.get(key) ?? on.set(key, []).get(key)!).push(index);
      isReceive[receiveId(rank, index)] = 1;
    });
    schedule.folds.forEach((fold, index) => {
      const parts = fold.after.flatMap((dependency) => producersOf(dependency).parts);
      for (const dependency of parts) dependents[idOf(rank, dependency)]!.push(foldId(rank, index));
      waiting[foldId(rank, index)] = parts.length;
    });
    schedule.sends.forEach((send, index) => {
      // A send of several producers' bytes ends its last step after all of them.
      const { parts } = producersOf(send.after);
      for (const dependency of parts) dependents[idOf(rank, dependency)]!.push(sendId(rank, index));
      waiting[sendId(rank, index)] = parts.length;
    });
  });
  schedules.forEach((schedule, from) => {
    const nth = new Map<string, number>();
    schedule.sends.forEach((send, index) => {
      const link = `${send.peer}/${send.rail ?? 0}`;
      const k = nth.get(link) ?? 0;
      nth.set(link, k + 1);
      const to = receiveId(send.peer, receivesOn[send.peer]!.get(`${from}/${send.rail ?? 0}`)![k]!);
      dependents[sendId(from, index)]!.push(to);
      waiting[to] = 1;
    });
  });
  const step = new Int32Array(total);
  const ready: number[] = [];
  for (let id = 0; id < total; id++) if (waiting[id] === 0) ready.push(id);
  let longest = 0;
  while (ready.length > 0) {
    const id = ready.pop()!;
    const done = step[id]! + isReceive[id]!;
    step[id] = done;
    longest = Math.max(longest, done);
    for (const next of dependents[id]!) {
      step[next] = Math.max(step[next]!, done);
      if (--waiting[next] === 0) ready.push(next);
    }
  }
  return longest;
}

/** Each rank's call: T = 64 N bytes of f32 (a barrier: nothing), root 0, the ring in rank order. */
function inputOf(collective: CollectiveName, n: number): (rank: number) => ScheduleInput {
  const ringOrder = Array.from({ length: n }, (_, rank) => rank);
  return (rank) => ({
    rank,
    worldSize: n,
    count: collective === 'barrier' ? 0 : 16 * n,
    width: collective === 'barrier' ? 1 : WIDTH,
    op: REDUCING.has(collective) ? 'sum' : null,
    root: ROOTED.has(collective) ? 0 : null,
    ringOrder,
    ringChannels: 1,
    inPlace: false,
  });
}

function measure(collective: CollectiveName, algorithm: string, schedule: ScheduleOf, n: number): Row {
  const tensorBytes = 16 * n * WIDTH;
  const input = inputOf(collective, n);
  const schedules = Array.from({ length: n }, (_, rank) => schedule(input(rank)));
  let messagesPerRank = 0;
  let nativeMessagesPerRank = 0;
  let sentPerRank = 0;
  let perLink = 0;
  schedules.forEach((one, rank) => {
    messagesPerRank = Math.max(messagesPerRank, one.sends.length);
    nativeMessagesPerRank = Math.max(nativeMessagesPerRank, withHeaderExchange((of) => schedules[of]!, n, rank).sends.length);
    sentPerRank = Math.max(sentPerRank, one.sends.reduce((sum, send) => sum + send.span.bytes, 0));
    const links = new Map<number, number>();
    for (const send of one.sends) links.set(send.peer, (links.get(send.peer) ?? 0) + send.span.bytes);
    perLink = Math.max(perLink, ...links.values(), 0);
  });
  const over = (bytes: number) => (collective === 'barrier' ? 0 : bytes / tensorBytes);
  return {
    collective,
    algorithm,
    n,
    messagesPerRank,
    nativeMessagesPerRank,
    steps: dependentSteps(schedules),
    stepBound: Math.ceil(Math.log2(n)),
    sentPerT: over(sentPerRank),
    sentBound: bandwidthBound(collective, n),
    linkPerT: over(perLink),
  };
}

/**
 * The coordinator's frames at join, tcp_peer, one rail, no secret (docs/protocol.md 8.1, 8.3):
 * per rank, in: the collective channel's Join, its PeerEndpoint publication, the control rail's
 * Join; out: two Readys and the run of the rank's own entry and its successor's (revision 14),
 * beside what revision 13 sent in its place, the whole table (every rank's line). Then each rank's
 * part of the endpoint gather among the ranks: its rounds, and the bytes it receives (a hello
 * and a run per round).
 */
function joinCost(n: number) {
  const entry = (rank: number): RankEndpoints => ({ endpoints: [{ host: '127.0.0.1', port: 40000 + (rank % 20000) }], dataPlane: 'auto' });
  const job = { uniqueId: UniqueId.fromBytes(new Uint8Array(UniqueId.BYTES)), worldSize: n, rails: 1 };
  const frameBytes = (frame: { payload: Uint8Array }) => FRAME_HEADER_BYTES + frame.payload.length;
  const table = formatEndpointTable(Array.from({ length: n }, (_, rank) => entry(rank)));
  const published = (rank: number) => Buffer.byteLength(formatRankEndpoints(entry(rank).endpoints, 'auto'));
  let inBytes = 0;
  let outBytes = 0;
  for (let rank = 0; rank < n; rank++) {
    inBytes += 3 * FRAME_HEADER_BYTES + published(rank);
    const run = n === 1 ? [entry(rank)] : [entry(rank), entry((rank + 1) % n)];
    outBytes += 2 * FRAME_HEADER_BYTES + frameBytes(endpointEntriesFrame(job, { source: 0, destination: rank, first: rank }, run));
  }
  const fullTableOutBytes = n * (3 * FRAME_HEADER_BYTES + Buffer.byteLength(table));
  // Rank 0's gather (every rank's is the same size): per round its partner's hello and run.
  const distances = EndpointGather.distances(n);
  const gatherBytes = distances.reduce((sum, distance) => {
    const partner = distance % n;
    const entries = Array.from({ length: EndpointGather.wanted(n, distance) }, (_, index) => entry((partner + 1 + index) % n));
    return sum + FRAME_HEADER_BYTES + frameBytes(endpointEntriesFrame(job, { source: partner, destination: 0, first: (partner + 1) % n }, entries));
  }, 0);
  return { n, framesIn: 3 * n, framesOut: 3 * n, bytesIn: inBytes, bytesOut: outBytes, fullTableBytesOut: fullTableOutBytes, gatherRounds: distances.length, gatherBytesPerRank: gatherBytes };
}

const rows: Row[] = [];
const skipped: string[] = [];
for (const n of SIZES) {
  for (const { collective, name, schedule } of scheduledRows()) {
    if (n > HEAVY_UP_TO && schedule(inputOf(collective, n)(0)).sends.length > LINEAR_SENDS) {
      skipped.push(`${collective} ${name} at ${n}`);
      continue;
    }
    rows.push(measure(collective, name, schedule, n));
  }
}
const joins = SIZES.map(joinCost);

if (values.json) {
  process.stdout.write(`${JSON.stringify({ rows, skipped, joins }, null, 2)}\n`);
} else {
  const fixed = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(3));
  process.stdout.write('| collective | algorithm | N | msgs/rank | with native headers | steps | bound ceil(log2 N) | sent/T | bound | link/T |\n|---|---|---|---|---|---|---|---|---|---|\n');
  for (const row of rows) {
    process.stdout.write(
      `| ${row.collective} | ${row.algorithm} | ${row.n} | ${row.messagesPerRank} | ${row.nativeMessagesPerRank} | ${row.steps} | ${row.stepBound} | ${fixed(row.sentPerT)} | ${fixed(row.sentBound)} | ${fixed(row.linkPerT)} |\n`,
    );
  }
  if (skipped.length > 0) process.stdout.write(`\nskipped (N-1 or more messages per rank, see the header): ${skipped.join('; ')}\n`);
  process.stdout.write(
    '\n| N | coordinator frames in at join | out | bytes in | bytes out | bytes out before (revision 13: the whole table to every rank) | gather rounds per rank | gather bytes in per rank |\n|---|---|---|---|---|---|---|---|\n',
  );
  for (const join of joins) {
    process.stdout.write(`| ${join.n} | ${join.framesIn} | ${join.framesOut} | ${join.bytesIn} | ${join.bytesOut} | ${join.fullTableBytesOut} | ${join.gatherRounds} | ${join.gatherBytesPerRank} |\n`);
  }
}
