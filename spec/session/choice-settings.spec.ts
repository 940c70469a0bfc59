/**
 * Ranks whose settings would choose collectives apart fail at open, every one alike, naming the
 * setting, both ranks and both values (docs/protocol.md 8.3, step 3; docs/errors.md,
 * SETTINGS_DIFFER); ranks whose effective settings agree open, however they were given.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CHOICE_VARIABLES, choiceDefaults, choiceSettings, profileValue, publishedChoiceSettings } from '../../lib/collectives/choice-settings.js';
import { resolveTuning } from '../../lib/collectives/tuning.js';
import { SettingsDifferError } from '../../lib/errors.js';
import { readSettings } from '../../lib/settings/read-settings.js';
import { SETTINGS } from '../../lib/settings/settings-table.js';
import { type RankOverrides, startCoordinator, type TestJob } from '../helpers/job.js';

let job: TestJob | null = null;
afterEach(async () => {
  await job?.dispose();
  job = null;
});

/** Opens every rank of a tcp_peer job with its own options; the outcome of each. */
async function open(perRank: readonly RankOverrides[]): Promise<PromiseSettledResult<unknown>[]> {
  job = await startCoordinator(perRank.length, { transport: 'tcp_peer' });
  const opened = job;
  // The JS plane: the check is the set-up's, whatever plane the job would run.
  return Promise.allSettled(perRank.map((overrides, rank) => opened.openRank(rank, { dataPlane: 'js', ...overrides })));
}

function failures(outcomes: readonly PromiseSettledResult<unknown>[]): unknown[] {
  return outcomes.map((outcome) => (outcome.status === 'rejected' ? outcome.reason : 'opened'));
}

describe('choice settings at open', () => {
  it('two ranks with different ring channels both fail, naming the setting, the ranks and both values', async () => {
    const outcomes = await open([{ ringChannels: 2 }, { ringChannels: 4 }]);
    for (const reason of failures(outcomes)) {
      expect(reason).toBeInstanceOf(SettingsDifferError);
      expect(reason).toMatchObject({
        code: 'SETTINGS_DIFFER',
        setting: 'GX1_RING_CHANNELS',
        ranks: [0, 1],
        values: ['2', '4'],
        message: 'GX1_RING_CHANNELS differs: rank 0 has 2, rank 1 has 4; every rank must choose collectives alike',
      });
    }
  });

  it('a value left at its default is named as the default; at 3 ranks every rank fails alike, the odd one and its predecessor named', async () => {
    const outcomes = await open([{}, {}, { algorithm: 'tree' }]);
    for (const reason of failures(outcomes)) {
      expect(reason).toMatchObject({ code: 'SETTINGS_DIFFER', message: 'GX1_COLLECTIVE_ALGORITHM differs: rank 1 has auto (the default), rank 2 has tree; every rank must choose collectives alike' });
    }
  });

  it('ranks whose effective settings agree open, an option and the default alike (ring channels 1 given on one rank only)', async () => {
    const outcomes = await open([{ ringChannels: 1, algorithm: 'ring' }, { algorithm: 'ring' }]);
    expect(failures(outcomes)).toEqual(['opened', 'opened']);
    const sessions = outcomes.map((outcome) => (outcome as PromiseFulfilledResult<{ allReduce(data: Float32Array): Promise<Float32Array> }>).value);
    const sums = await Promise.all(sessions.map((session, rank) => session.allReduce(Float32Array.of(rank + 1))));
    expect(sums.map((sum) => Array.from(sum))).toEqual([[3], [3]]);
  });

  it('an autotune profile is compared by its file\'s bytes, not its path', () => {
    const [a, b, c] = ['a', 'b', 'c'].map((name) => join(tmpdir(), `rxccl-choice-${process.pid}-${name}.json`));
    writeFileSync(a!, '{"version":1}');
    writeFileSync(b!, '{"version":1}');
    writeFileSync(c!, '{"version":2}');
    const value = (path: string) => profileValue(resolveTuning({ autotuneProfile: path }, 2, readSettings({})));
    expect(value(a!)).toMatch(/^fnv1a64:[0-9a-f]{16}$/);
    expect(value(b!)).toBe(value(a!));
    expect(value(c!)).not.toBe(value(a!));
    expect(value(join(tmpdir(), 'rxccl-choice-no-such-profile.json'))).toBe('unreadable');
  });

  it('cover every variable of the algorithm rows, in the table\'s order; a rank at the defaults publishes none, however they were given', () => {
    expect(CHOICE_VARIABLES).toEqual(SETTINGS.filter((row) => row.group === 'algorithm').flatMap((row) => Object.keys(row.variables)));
    const defaults = choiceDefaults(4, 2);
    const published = (env: Record<string, string>) => publishedChoiceSettings(resolveTuning({}, 4, readSettings(env), 2), 'none', defaults);
    expect(published({})).toEqual([]);
    expect(published({ GX1_RING_CHANNELS: '1', GX1_COLLECTIVE_ALGORITHM: 'auto', GX1_RAIL_ORDER: 'auto' })).toEqual([]);
    expect(published({ GX1_RING_CHANNELS: '3', GX1_TOPOLOGY_GROUPS: '0,1;2,3', GX1_RAIL_ORDER: '1,0' })).toEqual([
      ['GX1_RING_CHANNELS', '3'],
      ['GX1_TOPOLOGY_GROUPS', '0,1;2,3'],
      ['GX1_RAIL_ORDER', '1,0'],
    ]);
    // Rail links alone stand on uniform links, which GX1_TOPOLOGY_LINKS does not name.
    expect(published({ GX1_TOPOLOGY_RAIL_LINKS: '1@0-1:100:5' })).toEqual([['GX1_TOPOLOGY_RAIL_LINKS', '1@0-1:100:5,1@1-0:100:5']]);
    expect(choiceSettings(resolveTuning({}, 4, readSettings({ GX1_TOPOLOGY_LINKS: '0-1:100:5' })), 'none')).toContainEqual(['GX1_TOPOLOGY_LINKS', '0-1:100:5,1-0:100:5']);
  });
});
