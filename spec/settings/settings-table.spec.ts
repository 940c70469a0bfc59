/**
 * The settings table (#49 item 9, lib/settings/settings-table.ts): every GX1_* variable once, each
 * option it names a real option of `openSession()` or its tuning, README.md's variable tables
 * exactly what the table renders (run `npx tsx scripts/settings-readme.mts` after changing it),
 * and the effective value of each variable with where it came from.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { effectiveSettings, readSettings } from '../../lib/settings/read-settings.js';
import { readmeWithSettings, SETTINGS, type SettingRow, settingsMarkdown, VARIABLES } from '../../lib/settings/settings-table.js';

describe('the settings table', () => {
  it('lists every variable once, with its type, default, parser and a meaning', () => {
    const variables = VARIABLES.map(({ variable }) => variable);
    expect(new Set(variables).size).toBe(variables.length);
    for (const row of SETTINGS as readonly SettingRow[]) {
      const names = Object.keys(row.variables);
      expect(names.length).toBeGreaterThan(0);
      for (const name of names) expect(name).toMatch(/^GX1_[A-Z0-9_]+$/);
      for (const spec of Object.values(row.variables)) {
        expect(spec.type.length, names.join()).toBeGreaterThan(0);
        expect(spec.default.length, names.join()).toBeGreaterThan(0);
        expect(typeof spec.parse).toBe('function');
      }
      expect(row.meaning.length, names.join()).toBeGreaterThan(10);
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
    const settings = effectiveSettings(readSettings({ GX1_P2P_RAILS: ' 4 ', GX1_DEBUG: '', PATH: '/bin' }));
    expect(settings).toHaveLength(VARIABLES.length);
    expect(settings.find((setting) => setting.variable === 'GX1_P2P_RAILS')).toEqual({ variable: 'GX1_P2P_RAILS', value: '4', source: 'environment', options: ['rails'] });
    expect(settings.find((setting) => setting.variable === 'GX1_DEBUG')).toEqual({ variable: 'GX1_DEBUG', value: null, source: 'default', options: [] });
  });
});
