/**
 * `rxccl trace merge DIR` (#34 item 5): the ranks' flight records as one timeline, and one line
 * that names the rank behind, ranks that disagree, or ranks that wrote nothing; every rank of a
 * hung job writes its record, the culprit too; `rxccl launch` passes SIGUSR1 on to its ranks.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type FlightRecordJson, mergeFlightRecords, readFlightRecords } from '../../lib/diagnostics/flight-timeline.js';
import { runRxccl, startRxccl } from '../cli/rxccl-process.js';
import { compiledNode } from '../helpers/compiled-script.js';
import { scratchDirectories } from '../helpers/scratch.js';

const scratch = scratchDirectories('rxccl-trace-');

/** A record of `rank` whose collectives ran `[sequence, name, finished]` in order. */
function record(rank: number, collectives: [number, string, boolean][], failure?: string): FlightRecordJson {
  let clock = Date.UTC(2026, 11, 5, 12) + rank;
  const at = () => new Date((clock += 10)).toISOString();
  const common = { algorithm: 'ring', plane: 'js', bytes: 4 };
  return {
    rank,
    worldSize: 4,
    pid: 100 + rank,
    reason: 'timeout',
    writtenAt: at(),
    events: [
      ...collectives.flatMap(([sequence, collective, finished]) => [
        { at: at(), type: 'collective-started', sequence, collective, ...common },
        ...(finished ? [{ at: at(), type: 'collective-finished', sequence, collective, ...common }] : []),
      ]),
      ...(failure === undefined ? [] : [{ at: at(), type: 'failed', error: { code: 'TIMEOUT', message: failure } }]),
    ],
  };
}

describe('mergeFlightRecords', () => {
  it('names the rank behind, ranks that disagree at a sequence, ranks without a record, else the first failure', () => {
    const done: [number, string, boolean][] = [[0, 'allReduce', true], [1, 'allReduce', true]];
    const stuck: [number, string, boolean][] = [...done, [2, 'allReduce', false]];
    const behind = mergeFlightRecords([record(0, stuck), record(1, stuck), record(2, stuck), record(3, done)]);
    expect(behind.verdict).toBe('rank 3 is behind: rank 3 last ran sequence 1 (allReduce, finished), while ranks [0,1,2] reached sequence 2 (allReduce)');
    expect(behind.events).toHaveLength(3 * 5 + 4);
    expect(behind.events.every((entry, index) => index === 0 || behind.events[index - 1]!.at <= entry.at)).toBe(true);
    const disagree = mergeFlightRecords([record(0, stuck), record(1, stuck), record(2, stuck), record(3, [...done, [2, 'broadcast', false]])]);
    expect(disagree.verdict).toBe('ranks disagree at sequence 2: ranks [0,1,2] called allReduce, ranks [3] called broadcast');
    const silent = mergeFlightRecords([record(0, stuck), record(1, stuck)]);
    expect(silent.verdict).toBe(
      'ranks [2,3] wrote no record (killed, hung outside rxccl, or run without GX1_FLIGHT_RECORDER); every rank reached sequence 2 (allReduce)',
    );
    const level = mergeFlightRecords([0, 1, 2, 3].map((rank) => record(rank, stuck, `rank ${rank} waited`)));
    expect(level.verdict).toBe('every rank reached sequence 2 (allReduce); the first failure: rank 0: rank 0 waited');
    expect(level.events.at(-1)!.text).toBe('failed: TIMEOUT: rank 3 waited');
    // A record written at a failed receive, the session still up: that failure is the first.
    const receiveFailed = { ...record(1, stuck), events: [...record(1, stuck).events, { at: '2026-12-05T12:00:00.500Z', type: 'p2p-failed', operation: 'receive', peer: 0, tag: '9', error: { message: 'receive timed out' } }] };
    expect(mergeFlightRecords([record(0, stuck), receiveFailed]).verdict).toMatch(/; the first failure: rank 1: receive timed out$/);
    // A rank's waiting warning is a line of the timeline, and leaves the verdict as it was.
    const waiting = { at: '2026-12-05T12:00:30.000Z', type: 'collective-waiting', sequence: 2, collective: 'allReduce', algorithm: 'ring', plane: 'js', waitedMs: 30_000, missing: [3] };
    const warned = mergeFlightRecords([{ ...record(0, stuck), events: [...record(0, stuck).events, waiting] }, record(1, stuck), record(2, stuck), record(3, done)]);
    expect(warned.verdict).toBe(behind.verdict);
    expect(warned.events.at(-1)!.text).toBe('collective sequence 2 allReduce (ring, js) has waited 30000 ms for ranks [3]');
  });

  it('reads the records of a directory, skipping a file cut short and naming it', () => {
    const directory = scratch();
    writeFileSync(join(directory, 'rxccl-flight-rank0-100-timeout-1.json'), JSON.stringify(record(0, [[0, 'allReduce', true]])));
    writeFileSync(join(directory, 'rxccl-flight-rank1-101-timeout-1.json'), '{"rank": 1, "eve');
    writeFileSync(join(directory, 'notes.txt'), 'not a record');
    const { records, skipped } = readFlightRecords(directory);
    expect(records.map((each) => each.rank)).toEqual([0]);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatch(/^rxccl-flight-rank1-101-timeout-1\.json: /);
  });
});

describe('rxccl trace merge', () => {
  it('names the rank that skipped a collective in a 4-rank hang, from the records every rank wrote', async () => {
    const directory = scratch();
    const job = await runRxccl(['launch', '-n', '4', '--', ...compiledNode('spec/diagnostics/fixtures/skipping-rank.ts')], { GX1_FLIGHT_RECORDER: directory, GX1_TIMEOUT_MS: '3000' });
    expect(job.code).toBe(1);
    const ranks = readdirSync(directory).map((name) => Number(/rank(\d+)/.exec(name)![1]));
    expect(new Set(ranks)).toEqual(new Set([0, 1, 2, 3]));
    const merged = await runRxccl(['trace', 'merge', directory]);
    expect(merged.code, merged.stderr).toBe(0);
    const lines = merged.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^# \d+ records of ranks \[0,1,2,3\] \(world size 4\), \d+ events/);
    expect(lines.at(-1)).toBe('rxccl trace: rank 3 is behind: rank 3 last ran sequence 1 (allReduce, finished), while ranks [0,1,2] reached sequence 2 (allReduce)');
    expect((await runRxccl(['trace', 'merge', scratch()])).code).toBe(1);
  }, 90_000);

  it('rxccl launch passes SIGUSR1 on to its ranks, which write their records and go on', async () => {
    const directory = scratch();
    const go = join(scratch(), 'go');
    const launch = startRxccl(['launch', '-n', '2', '--', ...compiledNode('spec/diagnostics/fixtures/wait-for-file.ts')], { GX1_FLIGHT_RECORDER: directory, GO_FILE: go });
    let printed = '';
    launch.child.stdout!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    const until = async (condition: () => boolean) => {
      while (!condition()) await new Promise((resolve) => setTimeout(resolve, 50));
    };
    await until(() => printed.includes('rank 0 ready') && printed.includes('rank 1 ready'));
    launch.child.kill('SIGUSR1');
    await until(() => readdirSync(directory).filter((name) => name.includes('-signal-')).length === 2);
    writeFileSync(go, '');
    const finished = await launch.finished;
    expect(finished.code, finished.stderr).toBe(0);
  }, 60_000);
});
