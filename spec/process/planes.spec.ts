/**
 * Which data plane a tcp_peer job runs, with ranks as separate processes
 * (spec/process/fixtures/plane-rank.ts, `openSession()` from the GX1_* environment) against a
 * coordinator in this process: a rank that offers no native plane (GX1_DATA_PLANE=js, as a GX1
 * implementation without one publishes) makes every rank run the JS plane, and every collective is
 * still right; all ranks on defaults run the native plane; the native plane is right across
 * processes for random programs; its chain broadcast follows GX1_RING_ORDER, and ranks with
 * different orders are named at once as a mismatch of the chain's line; the hierarchical
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
import { layoutHash } from '../../lib/protocol/layout-hash.js';
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

    /**
     * The descriptor carries the layout's hash, not its text: a process names a layout it hashed
     * itself ("chain 1,3,0,2" on ranks 0..2, "chain 1,2,3,0" on rank 3), the other by its hash. So
     * a mismatch found on rank d names d's own chain as text and the other's as a number; a rank
     * that did not find it has the finder's text, through its abort (over the mesh or by the
     * coordinator).
     *
     * Every rank lingers LINGER_MS in the job after its session failed: a finder that closes its
     * data links at once can reach a waiting rank's engine first, which then fails with "direct
     * peer rank d left" without the mismatch (a race of the data link's end and the mesh's abort).
     */
    it('rank 3 alone with GX1_RING_ORDER=0,1,2,3 (the others 0,2,1,3): every rank fails fast with a mismatch naming both chains', () => chainMismatch('native'));
  });

  describe('The JS plane\'s agreement rides the schedule\'s links (GX1_DATA_PLANE=js)', () => {
    it('rank 3 alone with GX1_RING_ORDER=0,1,2,3 (the others 0,2,1,3): every rank fails fast with a mismatch naming both chains, found by the chain\'s headers', () => chainMismatch('js'));
  });
});

/**
 * Rank 3 orders the ring 0,1,2,3, the others 0,2,1,3: a broadcast from root 1 down the chain on
 * `plane` fails on every rank well before the timeout, with the mismatch naming both chains.
 */
async function chainMismatch(plane: 'native' | 'js'): Promise<void> {
  const timeoutMs = 20_000;
  const started = Date.now();
  const { coordinator, ranks } = await job(4, ['chain'], (rank) => ({ GX1_RING_ORDER: rank === 3 ? '0,1,2,3' : '0,2,1,3', GX1_COLLECTIVE_ALGORITHM: 'ring', LINGER_MS: '500', ...(plane === 'js' ? { GX1_DATA_PLANE: 'js' } : {}) }), timeoutMs);
  const exits = await Promise.all(ranks.map((rank) => rank.exited));
  expect(Date.now() - started, 'the whole job, start-up and linger included').toBeLessThan(timeoutMs);
  await expect(coordinator.done).rejects.toThrow(/collective sequence 0 mismatch: rank [0-2] submitted/);
  // As each side's process names them: its own chain as text, the other's as its hash.
  const others = { text: 'layout "chain 1,3,0,2"', hash: `layout ${layoutHash('chain 1,3,0,2')}` };
  const third = { text: 'layout "chain 1,2,3,0"', hash: `layout ${layoutHash('chain 1,2,3,0')}` };
  const operation = (layout: string) => `{Broadcast F32 root 1 count 524288 op none ${layout}}`;
  const foundBy = (finder: 'others' | 'third', rank: number) =>
    finder === 'others'
      ? `collective sequence 0 mismatch: rank ${rank} submitted ${operation(others.text)}, rank 3 submitted ${operation(third.hash)}`
      : `collective sequence 0 mismatch: rank ${rank} submitted ${operation(others.hash)}, rank 3 submitted ${operation(third.text)}`;
  const mismatches = new Set([0, 1, 2].flatMap((rank) => [foundBy('others', rank), foundBy('third', rank)]));
  let found = 0;
  for (const rank of ranks) {
    const what = describeRank(rank);
    const { failure, events } = reportOf(rank);
    // On the JS plane the root (rank 1) takes no message and compares only its predecessor's
    // header, which agrees: its one call may end right before the abort (docs/protocol.md 9.9).
    if (plane === 'js' && rank.rank === 1 && failure === undefined) {
      expect(exits[rank.rank], what).toEqual({ code: 0, signal: null });
      continue;
    }
    expect(exits[rank.rank], what).toEqual({ code: 3, signal: null });
    expect(failure, what).toBeDefined();
    expect(events.map((event) => `${event.collective} ${event.algorithm} ${event.plane}`), what).toEqual([`broadcast chain ${plane}`]);
    expect(failure!.ms, `${what}
failed after ${failure!.ms} ms`).toBeLessThan(timeoutMs / 4);
    const { code, message } = failure!;
    if (code === 'PROTOCOL') {
      // It found the mismatch itself, with a rank on the other side.
      found += 1;
      expect(mismatches, what).toContain(message);
      expect(message, what).toContain(rank.rank === 3 ? third.text : others.text);
    } else {
      // Told by a finder: over the mesh, or by the coordinator.
      expect(code, what).toBe('REMOTE_ABORT');
      const told = /^(?:direct peer rank \d aborted|collective coordinator aborted: rank \d aborted): (.*)$/.exec(message);
      expect(told, what).not.toBeNull();
      expect(mismatches, what).toContain(told![1]);
    }
  }
  expect(found, 'ranks that found the mismatch themselves').toBeGreaterThan(0);
}

