/**
 * "Option, else setting" (#49 item 6): `rails`, `faultTolerant` and `join` stand in for
 * GX1_P2P_RAILS, GX1_FAULT_TOLERANT and GX1_JOIN through one helper: the option where given
 * (a refusal naming it), else the variable, which is read (and a bad one refused) only then.
 */
import { describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { optionOrSetting } from '../../lib/settings/option-or-setting.js';
import { readSettings } from '../../lib/settings/read-settings.js';
import { resolveJoin } from '../../lib/transport/fault-tolerance.js';
import { validateRails } from '../../lib/transport/transport-kind.js';
import { rejection } from '../helpers/job.js';
import { refusal } from '../helpers/refusal.js';

const base = { coordinator: '127.0.0.1:29500', uniqueId: '00112233445566778899aabbccddeeff', rank: 0, worldSize: 2 };
const bad = readSettings({ GX1_P2P_RAILS: 'many', GX1_FAULT_TOLERANT: 'maybe', GX1_JOIN: 'perhaps' });
const set = readSettings({ GX1_P2P_RAILS: '3', GX1_FAULT_TOLERANT: '1', GX1_JOIN: 'true' });

describe('option, else setting', () => {
  it('takes the option, checked and named in its refusal, else the setting, else its default', () => {
    expect(optionOrSetting('rails', 2, validateRails, set.GX1_P2P_RAILS)).toBe(2);
    expect(optionOrSetting('rails', undefined, validateRails, set.GX1_P2P_RAILS)).toBe(3);
    expect(optionOrSetting('rails', undefined, validateRails, readSettings({}).GX1_P2P_RAILS)).toBe(1);
    expect(refusal(() => optionOrSetting('rails', 0, validateRails, set.GX1_P2P_RAILS))).toBe('rails: point-to-point rail count 0 is outside 1..=64');
    // A message that names the option already is not prefixed again.
    expect(refusal(() => optionOrSetting('join', 'yes' as unknown as boolean, resolveJoin, set.GX1_JOIN))).toBe('join must be true or false, got "yes"');
    expect([optionOrSetting('join', false, resolveJoin, set.GX1_JOIN), optionOrSetting('join', undefined, resolveJoin, set.GX1_JOIN)]).toEqual([false, true]);
  });

  it('reads a bad variable only without its option, and then refuses it by name', () => {
    expect(optionOrSetting('join', true, resolveJoin, bad.GX1_JOIN)).toBe(true);
    expect(refusal(() => optionOrSetting('join', undefined, resolveJoin, bad.GX1_JOIN))).toBe('GX1_JOIN must be 1 or 0 (true or false), got "perhaps"');
  });

  it("is how a session's options take rails and faultTolerant", () => {
    const given = resolveSessionOptions({ ...base, rails: 2, faultTolerant: false }, bad);
    expect([given.rails, given.faultTolerant]).toEqual([2, false]);
    const fromSettings = resolveSessionOptions(base, set);
    expect([fromSettings.rails, fromSettings.faultTolerant]).toEqual([3, true]);
    expect(refusal(() => resolveSessionOptions(base, readSettings({ GX1_P2P_RAILS: 'many' })))).toMatch(/^GX1_P2P_RAILS must be an integer in 1\.\.=64, got "many"$/);
    expect(refusal(() => resolveSessionOptions({ ...base, rails: 65 }, set))).toBe('rails: point-to-point rail count 65 is outside 1..=64');
  });

  it("is how the coordinator's options take them", async () => {
    const listening = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId: UniqueId.random(), worldSize: 2, rails: 2, faultTolerant: false }, bad);
    try {
      expect(listening.rails).toBe(2);
    } finally {
      await listening.close();
    }
    const refused = await rejection(Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId: UniqueId.random(), worldSize: 2, faultTolerant: 'on' as unknown as boolean }, set));
    expect([refused.code, refused.message]).toEqual(['INVALID_CONFIGURATION', 'faultTolerant must be true or false, got "on"']);
  });
});
