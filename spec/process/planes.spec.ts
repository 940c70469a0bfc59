/**
 * Which data plane a tcp_peer job runs, with ranks as separate processes
 * (spec/process/fixtures/plane-rank.ts, `openSession()` from the GX1_* environment) against a
 * coordinator in this process: a rank that offers no native plane (GX1_DATA_PLANE=js, as a GX1
 * implementation without one publishes) makes every rank run the JS plane, and every collective is
 * still right; all ranks on defaults run the native plane; the native plane is right across
 * processes for random programs; its chain broadcast follows GX1_RING_ORDER, and ranks with
 * different orders all fail at open naming both (SETTINGS_DIFFER); the hierarchical
 * collectives (GX1_TOPOLOGY_GROUPS) give the staged path's bits; the tree family
 * (GX1_COLLECTIVE_ALGORITHM=tree) at 16 processes is right, every rank's all-reduce the same bits;
 * payloads on both sides of each switch point of a shared-memory link (a slot, fragments, a full
 * ring, single copy or the socket) are exact, single copy on or off.
 *
 * Each child costs half a second of start-up (transpiled ahead, spec/helpers/compiled-script.ts),
 * and this machine may have 2 cores: the jobs are few, each with a whole program.
 */
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { siblingReads } from '../helpers/cross-memory.js';
import { cleanUpJobsAfterEach, forgetCallerSettings, killAll, liveProcesses, type RankProcess, spawnRank } from '../helpers/rank-process.js';

const FIXTURE = 'spec/process/fixtures/plane-rank.ts';
const TIMEOUT_MS = 10_000;

const native = dataPlaneEngine() !== null;
const skipped = native ? '' : ' (skipped: the native addon is not built here, dataPlaneEngine() is null)';
if (!native) console.warn('spec/process/planes.spec.ts: the native-plane tests are skipped: the native addon is not built here (dataPlaneEngine() is null)');

// Where processes may not read each other's memory (a seccomp filter, Yama's scope 2 or 3) the
// ranks' links stay inline, by design: the test expects that, and says why.
const siblings = siblingReads();
if (native && !siblings.allowed) console.warn(`spec/process/planes.spec.ts: single copy between processes is not checked: ${siblings.reason}`);

forgetCallerSettings();

const { coordinators, spawned } = cleanUpJobsAfterEach();

interface Job {
  readonly coordinator: Coordinator;
  readonly ranks: RankProcess[];
}

/** A coordinator here and `worldSize` fixture processes running `args`, rank r with `envOf(r)`, over `rails` rails. */
async function job(worldSize: number, args: readonly string[], envOf: (rank: number) => Record<string, string> = () => ({}), timeoutMs = TIMEOUT_MS, rails = 1): Promise<Job> {
  const uniqueId = UniqueId.random();
  const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize, collectiveTimeoutMs: timeoutMs, transport: 'tcp_peer', rails });
  coordinators.push(coordinator);
  const ranks = Array.from({ length: worldSize }, (_, rank) =>
    spawnRank({
      script: FIXTURE,
      args,
      coordinator: `127.0.0.1:${coordinator.address.port}`,
      uniqueId: uniqueId.toHex(),
      rank,
      worldSize,
      timeoutMs,
      env: { GX1_COLLECTIVE_TRANSPORT: 'tcp_peer', GX1_P2P_RAILS: String(rails), ...envOf(rank) },
    }),
  );
  spawned.push(...ranks);
  return { coordinator, ranks };
}

function describeRank(rank: RankProcess): string {
  return `rank ${rank.rank} (pid ${rank.pid})\nstdout:\n${rank.lines.join('\n')}\nstderr:\n${rank.stderr()}`;
}

interface StartedEvent {
  readonly sequence: number;
  readonly collective: string;
  readonly algorithm: string;
  readonly plane: string;
  readonly bytes: number;
}

interface CaseLine {
  readonly index: number;
  readonly what: string;
  readonly variant: string;
  readonly exact: boolean;
  readonly wrong: string | null;
  readonly digest: string | null;
}

interface Summary {
  readonly cases: number;
  readonly wrong: number;
  readonly inexact: number;
  readonly planes: string[];
}

interface Failure {
  readonly code: string;
  readonly message: string;
  readonly ms: number;
}

/** What a rank printed, parsed. */
function reportOf(rank: RankProcess) {
  const parsed = <T>(prefix: string): T[] => rank.lines.filter((line) => line.startsWith(`${prefix} `)).map((line) => JSON.parse(line.slice(prefix.length + 1)) as T);
  return {
    events: parsed<StartedEvent>('EVENT'),
    cases: parsed<CaseLine>('CASE'),
    summary: parsed<Summary>('SUMMARY')[0],
    failure: parsed<Failure>('FAILED')[0],
  };
}

/** Waits for every rank to exit 0 and the coordinator to finish; returns each rank's report. */
async function completed({ coordinator, ranks }: Job) {
  const exits = await Promise.all(ranks.map((rank) => rank.exited));
  exits.forEach((exit, rank) => expect(exit, describeRank(ranks[rank]!)).toEqual({ code: 0, signal: null }));
  await expect(coordinator.done).resolves.toBeUndefined();
  return ranks.map((rank) => {
    const report = reportOf(rank);
    const what = describeRank(rank);
    expect(report.summary, what).toBeDefined();
    expect(
      report.cases.filter((one) => one.wrong !== null),
      what,
    ).toEqual([]);
    expect(report.summary!.wrong, what).toBe(0);
    expect(report.cases.length, what).toBe(report.summary!.cases);
    return { rank, ...report, summary: report.summary!, what };
  });
}

/** The (collective, algorithm, plane) of each started event, as `allReduce pairwise native`. */
const choices = (events: readonly StartedEvent[]) => events.map((event) => `${event.collective} ${event.algorithm} ${event.plane}`);

describe('tcp_peer data planes, ranks in separate processes', () => {
  it('A rank that offers no native plane (GX1_DATA_PLANE=js, as a GX1 implementation without one publishes) joins a default tcp_peer job of 4 processes on one host: every collective completes, right, and every rank runs the JS plane', async () => {
    const worldSize = 4;
    const reports = await completed(await job(worldSize, ['fixed'], (rank): Record<string, string> => (rank === 3 ? { GX1_DATA_PLANE: 'js' } : {})));
    for (const { summary, events, what } of reports) {
      expect(summary.planes, what).toContain('js');
      for (const plane of summary.planes) expect(['js', 'coordinator'], what).toContain(plane);
      // The JS plane's rows as the cost model prices them (docs/protocol.md 9.10.1): recursive
      // doubling for small all-reduces, pairwise for a large one, the chain for a 1 MiB broadcast at 4 ranks.
      expect(choices(events), what).toEqual(
        expect.arrayContaining(['allReduce recursive-doubling js', 'allReduce pairwise js', 'broadcast chain js', 'scatter staged coordinator', 'allToAllV staged coordinator']),
      );
    }
    expect(liveProcesses()).toEqual([]);
  });

  it.skipIf(!native)(`the same 4 processes, every one on defaults, run the native plane, every pair of them by single copy (one host)${skipped}`, async () => {
    const reports = await completed(await job(4, ['fixed'], () => ({ GX1_DEBUG: 'info' })));
    for (const { rank, summary, events, what } of reports) {
      // Said at close (GX1_DEBUG=info): every link between two processes of this host agreed to single copy.
      const others = siblings.allowed ? [0, 1, 2, 3].filter((peer) => peer !== rank.rank).join(',') : '';
      expect(rank.stderr(), what).toContain(`rank ${rank.rank} single copy: read from ranks [${others}], read by ranks [${others}]`);
      expect(summary.planes, what).toContain('native');
      for (const plane of summary.planes) expect(['native', 'coordinator'], what).toContain(plane);
      expect(choices(events), what).toEqual(
        expect.arrayContaining(['allReduce all-pairs native', 'allReduce pairwise native', 'broadcast chain native', 'broadcast pairwise native', 'barrier pairwise native']),
      );
      // Every case the native schedules fold is folded in rank order, as the reference: bit for bit.
      expect(summary.inexact, what).toBe(0);
    }
  });

  it.skipIf(!native)(`3 processes on defaults share a ring on every link (one host); one that cannot map its peers' rings (pidfd_getfd refused) says so and keeps TCP, exact either way${skipped}`, async () => {
    const refusing = 2;
    const preload = fileURLToPath(new URL('../helpers/fail-shared-memory-joins.mjs', import.meta.url));
    const reports = await completed(await job(3, ['fixed'], (rank) => ({ GX1_DEBUG: 'info', ...(rank === refusing ? { NODE_OPTIONS: `--import=${preload}` } : {}) })));
    for (const { rank, summary, what } of reports) {
      // Said at close (GX1_DEBUG=info): the rings this rank reads (its peers' but the refusing rank's
      // own reads) and the peers reading its ring (all but the refusing rank).
      const others = [0, 1, 2].filter((peer) => peer !== rank.rank);
      const readsFrom = siblings.allowed && rank.rank !== refusing ? others : [];
      const readBy = siblings.allowed ? others.filter((peer) => peer !== refusing) : [];
      expect(rank.stderr(), what).toContain(`rank ${rank.rank} shared memory: reads rings of ranks [${readsFrom.join(',')}], read by ranks [${readBy.join(',')}]`);
      if (rank.rank === refusing && siblings.allowed) {
        for (const peer of others) {
          expect(rank.stderr(), what).toContain(`rank ${refusing} keeps TCP with rank ${peer}: cannot map its peer's ring: pidfd_getfd: Operation not permitted (forced for a test)`);
        }
      }
      expect(summary.planes, what).toContain('native');
      expect(summary.wrong, what).toBe(0);
      expect(summary.inexact, what).toBe(0);
    }
  }, 60_000);

  it.skipIf(!native)(`The real native plane across processes, as a property: random programs, 3 or 4 ranks, over 2 rails (large messages striped; every other job here has 1)${skipped}`, async () => {
    const rails = 2;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 0x7fff_ffff }), fc.constantFrom(3, 4), async (seed, worldSize) => {
        const running = await job(worldSize, ['random', String(seed)], undefined, TIMEOUT_MS, rails);
        try {
          const reports = await completed(running);
          for (const { summary, events, what } of reports) {
            const context = `seed ${seed}, ${worldSize} ranks, ${rails} rails\n${what}`;
            expect(summary.planes, context).toContain('native');
            for (const plane of summary.planes) expect(['native', 'coordinator'], context).toContain(plane);
            // Every program has a large all-reduce and a large broadcast.
            expect(choices(events), context).toEqual(expect.arrayContaining(['allReduce pairwise native', 'broadcast pairwise native']));
            expect(summary.inexact, context).toBe(0);
          }
        } finally {
          await killAll();
          await running.coordinator.close();
        }
      }),
      // Each run is a job of processes: no shrinking (a seed's neighbours say nothing more).
      { numRuns: 3, endOnFailure: true },
    );
  }, 60_000);

  it.skipIf(!native)(`2 processes on one host: all-reduces, broadcasts and all-gathers whose payloads sit on both sides of each switch point of a shared-memory link (8 KiB in a slot, then fragments; 256 KiB a full ring, single copy or the socket past it) are exact, with single copy on and off${skipped}`, async () => {
    // At 2 ranks each of these sends the whole tensor as one payload (all-pairs, pairwise).
    const worldSize = 2;
    for (const singleCopy of ['auto', 'off'] as const) {
      const reports = await completed(await job(worldSize, ['switches'], () => ({ GX1_SINGLE_COPY: singleCopy }), 30_000));
      for (const { summary, cases, what } of reports) {
        const context = `GX1_SINGLE_COPY=${singleCopy}\n${what}`;
        expect(summary.planes, context).toEqual(['native']);
        expect(cases.length, context).toBe(24);
        expect(summary.inexact, context).toBe(0);
      }
    }
  }, 120_000);

  it.skipIf(!native)(`4 processes with GX1_COLLECTIVE_ALGORITHM=hierarchical and GX1_TOPOLOGY_GROUPS=0,2;1,3: the all-reduce, all-gather and reduce-scatter run hierarchical on the native plane, every result bit for bit${skipped}`, async () => {
    const reports = await completed(await job(4, ['fixed'], () => ({ GX1_COLLECTIVE_ALGORITHM: 'hierarchical', GX1_TOPOLOGY_GROUPS: '0,2;1,3' })));
    for (const { summary, events, what } of reports) {
      expect(choices(events), what).toEqual(expect.arrayContaining(['allReduce hierarchical native', 'allGather hierarchical native', 'reduceScatter hierarchical native']));
      // Folds in rank order: the staged path's bits.
      expect(summary.inexact, what).toBe(0);
    }
  });

  it.skipIf(!native)(`16 processes with GX1_COLLECTIVE_ALGORITHM=tree: the barrier, all-reduces (Rabenseifner's from 256 KiB), broadcasts, reduces, all-gathers and gathers run the tree family on the native plane, every result right, integers bit for bit, every rank's all-reduce identical${skipped}`, async () => {
    const reports = await completed(await job(16, ['fixed'], () => ({ GX1_COLLECTIVE_ALGORITHM: 'tree' }), 60_000));
    for (const { summary, events, cases, what } of reports) {
      expect(summary.planes, what).toContain('native');
      expect(choices(events), what).toEqual(
        expect.arrayContaining([
          'barrier dissemination native',
          'allReduce recursive-doubling native',
          'allReduce rabenseifner native',
          'broadcast binomial native',
          'reduce binomial native',
          'allGather bruck native',
          'gather binomial native',
        ]),
      );
      // A tree folds in tree order: floats within the fixture's tolerance, integers exact.
      for (const one of cases.filter(({ what: c }) => !/ (f16|bf16|f32|f64) /.test(c))) expect(one.exact, `${one.what}\n${what}`).toBe(true);
    }
    // Every rank of a recursive-doubling or Rabenseifner all-reduce ends with the same bits.
    const allReduces = reports[0]!.cases.filter(({ what: c }) => c.startsWith('allReduce'));
    expect(allReduces.length).toBeGreaterThan(0);
    for (const { index } of allReduces) expect(new Set(reports.map(({ cases }) => cases[index]!.digest)).size).toBe(1);
  }, 180_000);

  describe.skipIf(!native)(`The native chain broadcast follows GX1_RING_ORDER${skipped}`, () => {
    it('4 processes with GX1_RING_ORDER=0,2,1,3 broadcast 2 MiB from root 1 down the chain 1,3,0,2: right, by the chain on the native plane', async () => {
      // (From 256 KiB on one host `auto` broadcasts pairwise: the ring policy keeps the chain.)
      const reports = await completed(await job(4, ['chain'], () => ({ GX1_RING_ORDER: '0,2,1,3', GX1_COLLECTIVE_ALGORITHM: 'ring' })));
      for (const { events, summary, what } of reports) {
        expect(summary.cases, what).toBe(1);
        expect(summary.inexact, what).toBe(0);
        expect(events, what).toEqual([{ sequence: 0, collective: 'broadcast', algorithm: 'chain', plane: 'native', bytes: 2 * 1024 * 1024 }]);
      }
    });
  });

  describe('Ranks whose GX1_RING_ORDER differ (docs/protocol.md 8.3, step 3)', () => {
    it('rank 3 alone with GX1_RING_ORDER=0,1,2,3 (the others 0,2,1,3): every rank fails at open, before any collective, naming the setting and both orders', async () => {
      const { coordinator, ranks } = await job(4, ['chain'], (rank) => ({ GX1_RING_ORDER: rank === 3 ? '0,1,2,3' : '0,2,1,3' }));
      const exits = await Promise.all(ranks.map((rank) => rank.exited));
      const text = 'GX1_RING_ORDER differs: rank 2 has 0,2,1,3, rank 3 has 0,1,2,3; every rank must choose collectives alike';
      await expect(coordinator.done).rejects.toThrow(text);
      for (const rank of ranks) {
        const what = describeRank(rank);
        expect(exits[rank.rank], what).toEqual({ code: 3, signal: null });
        const { failure, events } = reportOf(rank);
        expect(failure, what).toEqual({ code: 'SETTINGS_DIFFER', message: text, ms: 0 });
        expect(events, what).toEqual([]);
      }
    });
  });
});

