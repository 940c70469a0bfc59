/** Which busy-poll window a rank uses: its option, else GX1_BUSY_POLL_US, else the host's cores decide; and the native plane's spin and inline budget. */
import { describe, expect, it } from 'vitest';
import {
  busyPollMicros,
  DEFAULT_BUSY_POLL_MICROS,
  meshProcessesOnHost,
  resolveBusyPoll,
  stagedProcessesOnHost,
} from '../../lib/session/busy-poll.js';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { ConfigurationError } from '../../lib/errors.js';
import { readSettings } from '../../lib/settings/read-settings.js';
import { DataPlane, type DataPlaneEngine, DEFAULT_INLINE_MICROS } from '../../lib/transport/data-plane.js';

/** `GX1_BUSY_POLL_US` of `env`, as the settings read it. */
const busyPollOf = (env: Record<string, string>) => readSettings(env).GX1_BUSY_POLL_US;

const base = { coordinator: '127.0.0.1:29500', uniqueId: '00112233445566778899aabbccddeeff', rank: 0, worldSize: 2 };

describe('resolveBusyPoll', () => {
  it('takes the option over the variable, and auto where neither says', () => {
    expect(resolveBusyPoll(20, busyPollOf({ GX1_BUSY_POLL_US: '7' }))).toBe(20);
    expect(resolveBusyPoll(undefined, busyPollOf({ GX1_BUSY_POLL_US: ' 7 ' }))).toBe(7);
    expect(resolveBusyPoll(undefined, busyPollOf({ GX1_BUSY_POLL_US: 'AUTO' }))).toBe('auto');
    expect(resolveBusyPoll(undefined, busyPollOf({}))).toBe('auto');
    expect(resolveBusyPoll('auto', busyPollOf({ GX1_BUSY_POLL_US: '0' }))).toBe('auto');
    expect(resolveSessionOptions(base, { GX1_BUSY_POLL_US: '0' }).busyPoll).toBe(0);
    expect(resolveSessionOptions({ ...base, busyPollMicros: 80 }, {}).busyPoll).toBe(80);
  });

  it('refuses what is not whole microseconds 0..100000, naming the setting and the value', () => {
    expect(() => resolveBusyPoll(undefined, busyPollOf({ GX1_BUSY_POLL_US: '5us' }))).toThrow(
      new ConfigurationError('GX1_BUSY_POLL_US must be auto or whole microseconds 0..100000, got "5us"'),
    );
    expect(() => resolveBusyPoll(-1, busyPollOf({}))).toThrow('busyPollMicros must be auto or whole microseconds 0..100000, got "-1"');
    expect(() => resolveBusyPoll(1.5, busyPollOf({}))).toThrow(ConfigurationError);
    expect(() => resolveBusyPoll(100_001, busyPollOf({}))).toThrow(ConfigurationError);
  });
});

describe('the native data plane spin (spinMicros, GX1_SPIN_US)', () => {
  it('takes the option over the variable, auto where neither says, and refuses what is not whole microseconds 0..100000 by name', () => {
    expect(resolveSessionOptions(base, {}).spin).toBe('auto');
    expect(resolveSessionOptions(base, { GX1_SPIN_US: ' 250 ' }).spin).toBe(250);
    expect(resolveSessionOptions({ ...base, spinMicros: 0 }, { GX1_SPIN_US: '250' }).spin).toBe(0);
    expect(resolveSessionOptions({ ...base, spinMicros: 'auto' }, { GX1_SPIN_US: '250' }).spin).toBe('auto');
    expect(() => resolveSessionOptions(base, { GX1_SPIN_US: '20ms' })).toThrow(
      new ConfigurationError('GX1_SPIN_US must be auto or whole microseconds 0..100000, got "20ms"'),
    );
    expect(() => resolveSessionOptions({ ...base, spinMicros: 100_001 }, {})).toThrow('spinMicros must be auto or whole microseconds 0..100000, got "100001"');
  });
});

describe('the native data plane inline budget (inlineMicros, GX1_INLINE_US)', () => {
  it('takes the option over the variable, auto where neither says, and refuses what is not whole microseconds 0..100000 by name', () => {
    expect(resolveSessionOptions(base, {}).inline).toBe('auto');
    expect(resolveSessionOptions(base, { GX1_INLINE_US: ' 50 ' }).inline).toBe(50);
    expect(resolveSessionOptions({ ...base, inlineMicros: 0 }, { GX1_INLINE_US: '50' }).inline).toBe(0);
    expect(() => resolveSessionOptions(base, { GX1_INLINE_US: '1ms' })).toThrow(new ConfigurationError('GX1_INLINE_US must be auto or whole microseconds 0..100000, got "1ms"'));
    expect(() => resolveSessionOptions({ ...base, inlineMicros: -1 }, {})).toThrow('inlineMicros must be auto or whole microseconds 0..100000, got "-1"');
  });

  it("reaches the engine as its inlineUs: auto as 1000, a number as itself", () => {
    const given: unknown[] = [];
    const Engine = function (this: unknown, ...args: unknown[]) {
      given.push(args[10]);
    } as unknown as DataPlaneEngine;
    const alone = { rails: 1, send: [undefined], receive: [undefined] };
    DataPlane.open(Engine, 0, 1, alone);
    DataPlane.open(Engine, 0, 1, alone, { inline: 0 });
    DataPlane.open(Engine, 0, 1, alone, { inline: 250 });
    expect(given).toEqual([DEFAULT_INLINE_MICROS, 0, 250]);
    expect(DEFAULT_INLINE_MICROS).toBe(1_000);
  });
});

describe('busyPollMicros', () => {
  it('polls under auto only where every process of the job on this host has a core', () => {
    expect(busyPollMicros('auto', 2, 2)).toBe(DEFAULT_BUSY_POLL_MICROS);
    expect(busyPollMicros('auto', 4, 2)).toBe(0);
    expect(busyPollMicros('auto', null, 64)).toBe(0);
  });

  it('uses a window that was given, even oversubscribed', () => {
    expect(busyPollMicros(0, 1, 16)).toBe(0);
    expect(busyPollMicros(200, 8, 2)).toBe(200);
  });

  it('counts the mesh ranks that advertise this rank\'s host, and a loopback coordinator\'s whole job', () => {
    const table = [
      [{ host: '10.0.0.1', port: 1 }],
      [{ host: '10.0.0.2', port: 2 }],
      [{ host: '10.0.0.1', port: 3 }],
    ];
    expect(meshProcessesOnHost(table, 0)).toBe(2);
    expect(meshProcessesOnHost(table, 1)).toBe(1);
    expect(stagedProcessesOnHost('127.0.0.1', 4)).toBe(5);
    expect(stagedProcessesOnHost('localhost', 1)).toBe(2);
    expect(stagedProcessesOnHost('10.0.0.1', 4)).toBe(null);
  });
});
