/**
 * The settings table (#49 item 9, lib/launch/settings-table.ts): every GX1_* variable once, each
 * option it names a real option of `openSession()` or its tuning, README.md's variable tables
 * exactly what the table renders (run `npx tsx scripts/settings-readme.mts` after changing it),
 * and the effective value of each variable with where it came from.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { effectiveSettings, readmeWithSettings, SETTINGS, settingsMarkdown } from '../../lib/launch/settings-table.js';

describe('the settings table', () => {
  it('lists every variable once, with a meaning', () => {
    const variables = SETTINGS.flatMap((row) => row.variables);
    expect(new Set(variables).size).toBe(variables.length);
    for (const row of SETTINGS) {
      expect(row.variables.length).toBeGreaterThan(0);
      for (const variable of row.variables) expect(variable).toMatch(/^GX1_[A-Z0-9_]+$/);
      expect(row.meaning.length, row.variables.join()).toBeGreaterThan(10);
    }
  });

  it('names only options that openSession() or its tuning takes', () => {
    const declared = ['lib/session/session-options.ts', 'lib/collectives/tuning.ts'].map((file) => readFileSync(file, 'utf8')).join('\n');
    for (const option of SETTINGS.flatMap((row) => row.options)) expect(declared, option).toMatch(new RegExp(`\\b${option}\\??:`));
  });

  it("is what README.md's variable tables say, row for row", () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readmeWithSettings(readme), 'README.md differs from the settings table: npx tsx scripts/settings-readme.mts').toBe(readme);
    for (const group of ['job', 'algorithm'] as const) expect(readme).toContain(settingsMarkdown(group));
  });

  it('gives each variable its value from the environment, or says the default applies', () => {
    const settings = effectiveSettings({ GX1_P2P_RAILS: ' 4 ', GX1_DEBUG: '', PATH: '/bin' });
    expect(settings).toHaveLength(SETTINGS.flatMap((row) => row.variables).length);
    expect(settings.find((setting) => setting.variable === 'GX1_P2P_RAILS')).toEqual({ variable: 'GX1_P2P_RAILS', value: '4', source: 'environment', options: ['rails'] });
    expect(settings.find((setting) => setting.variable === 'GX1_DEBUG')).toEqual({ variable: 'GX1_DEBUG', value: null, source: 'default', options: [] });
  });
});
