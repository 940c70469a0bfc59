/**
 * The native data plane's spin where a host's ranks outnumber its CPUs (lib/session/plane-spin.ts):
 * `auto` stays adaptive while every process of the job on the host has a CPU, and is
 * `GX1_OVERSUBSCRIBED_SPIN_US` (default 0, sleep at once) once they outnumber them; a number given
 * is used as it is. Pure arithmetic on the counts: nothing here is timed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';
import { DEFAULT_OVERSUBSCRIBED_SPIN_MICROS, planeSpinMicros } from '../../lib/session/plane-spin.js';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { MAX_SPIN_MICROS, type MicrosSetting } from '../../lib/settings/micros-setting.js';

const base = { coordinator: '127.0.0.1:29500', uniqueId: '00112233445566778899aabbccddeeff', rank: 0, worldSize: 2 };

const arbMicros = fc.integer({ min: 0, max: MAX_SPIN_MICROS });
const arbSetting: fc.Arbitrary<MicrosSetting> = fc.oneof(fc.constant('auto' as const), arbMicros);

describe('planeSpinMicros', () => {
  it('keeps auto (adaptive) up to a CPU per process, and takes the oversubscribed spin from one process more', () => {
    expect(planeSpinMicros('auto', 'auto', 2, 2)).toBe('auto');
    expect(planeSpinMicros('auto', 'auto', 1, 2)).toBe('auto');
    expect(planeSpinMicros('auto', 'auto', 3, 2)).toBe(DEFAULT_OVERSUBSCRIBED_SPIN_MICROS);
    expect(planeSpinMicros('auto', 'auto', 8, 2)).toBe(0);
    expect(planeSpinMicros('auto', 'auto', 16, 2)).toBe(0);
    expect(planeSpinMicros('auto', 25, 8, 2)).toBe(25);
    expect(planeSpinMicros('auto', 25, 8, 8)).toBe('auto');
    expect(planeSpinMicros('auto', 25, 32, 16)).toBe(25);
    expect(DEFAULT_OVERSUBSCRIBED_SPIN_MICROS).toBe(0);
  });

  it('uses a spin given as a number as it is, whatever the host', () => {
    expect(planeSpinMicros(0, 25, 1, 2)).toBe(0);
    expect(planeSpinMicros(250, 0, 16, 2)).toBe(250);
    expect(planeSpinMicros(20_000, 'auto', 64, 2)).toBe(20_000);
  });

  it('for any counts: a number stays, auto is adaptive exactly where processes <= cores, else the oversubscribed setting (auto: the default)', () => {
    fc.assert(
      fc.property(arbSetting, arbSetting, fc.integer({ min: 1, max: 512 }), fc.integer({ min: 1, max: 256 }), (spin, oversubscribed, processes, cores) => {
        const chosen = planeSpinMicros(spin, oversubscribed, processes, cores);
        if (spin !== 'auto') expect(chosen).toBe(spin);
        else if (processes <= cores) expect(chosen).toBe('auto');
        else expect(chosen).toBe(oversubscribed === 'auto' ? DEFAULT_OVERSUBSCRIBED_SPIN_MICROS : oversubscribed);
      }),
    );
  });
});

describe('GX1_OVERSUBSCRIBED_SPIN_US', () => {
  it('is auto where unset, whole microseconds 0..100000 where given, and refused by name otherwise', () => {
    expect(resolveSessionOptions(base, {}).oversubscribedSpin).toBe('auto');
    expect(resolveSessionOptions(base, { GX1_OVERSUBSCRIBED_SPIN_US: ' 40 ' }).oversubscribedSpin).toBe(40);
    expect(resolveSessionOptions(base, { GX1_OVERSUBSCRIBED_SPIN_US: 'AUTO' }).oversubscribedSpin).toBe('auto');
    expect(() => resolveSessionOptions(base, { GX1_OVERSUBSCRIBED_SPIN_US: '1ms' })).toThrow(
      new ConfigurationError('GX1_OVERSUBSCRIBED_SPIN_US must be auto or whole microseconds 0..100000, got "1ms"'),
    );
    expect(() => resolveSessionOptions(base, { GX1_OVERSUBSCRIBED_SPIN_US: '100001' })).toThrow(ConfigurationError);
  });
});
