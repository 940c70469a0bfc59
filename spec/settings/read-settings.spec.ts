/**
 * The settings object (#49 item 9): every GX1_* variable of the settings table read once, by its
 * parser, into a deeply frozen object with where each value came from; every bad value refused
 * naming its variable, checked over the whole table (a new row is covered, or this spec says it
 * is not); options win over the variables they stand for.
 */
import { describe, expect, it } from 'vitest';
import { readAutotuneProfile } from '../../lib/collectives/autotune-profile.js';
import { doctorReport } from '../../lib/cli/doctor-report.js';
import { resolveTuning } from '../../lib/collectives/tuning.js';
import { DebugLog } from '../../lib/diagnostics/debug-log.js';
import { ConfigurationError, readSetting } from '../../lib/errors.js';
import { discoverJob } from '../../lib/launch/discover-job.js';
import { flightRecordingFromEnvironment } from '../../lib/session/flight-recording.js';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { processSettings, readSettings, settingsOf } from '../../lib/settings/read-settings.js';
import { peerEndpointVariables } from '../../lib/settings/setting-parts.js';
import { type VariableName, VARIABLES } from '../../lib/settings/settings-table.js';
import { asText, trimmedText } from '../../lib/settings/variable-parsers.js';
import { peerEndpointConfigurationFromEnvironment } from '../../lib/transport/peer-endpoint-config.js';
import { refusal } from '../helpers/refusal.js';

const base = { coordinator: '127.0.0.1:29500', uniqueId: '00112233445566778899aabbccddeeff', rank: 0, worldSize: 2 };
const rxcclJob = { GX1_COORDINATOR: '127.0.0.1:29500', GX1_UNIQUE_ID: '00112233445566778899aabbccddeeff', GX1_RANK: '0', GX1_WORLD_SIZE: '2' };
const endpoints = (env: Record<string, string>) => peerEndpointConfigurationFromEnvironment({ variables: peerEndpointVariables(readSettings(env)), rails: 1, jobInterface: '127.0.0.1' });

/**
 * The variables the table reads as text (their check needs the job: the world size, the rails, a
 * file): each refused, with a bad value, where the job reads it, naming the variable.
 */
const REFUSED_WHERE_USED: Record<string, () => unknown> = {
  GX1_COORDINATOR: () => discoverJob({ ...rxcclJob, GX1_COORDINATOR: 'nowhere' }),
  GX1_UNIQUE_ID: () => discoverJob({ ...rxcclJob, GX1_UNIQUE_ID: 'xyz' }),
  GX1_RANK: () => discoverJob({ ...rxcclJob, GX1_RANK: 'first' }),
  GX1_WORLD_SIZE: () => discoverJob({ ...rxcclJob, GX1_WORLD_SIZE: 'two' }),
  GX1_LOCAL_RANK: () => discoverJob({ ...rxcclJob, GX1_LOCAL_RANK: 'first' }),
  GX1_LOCAL_WORLD_SIZE: () => discoverJob({ ...rxcclJob, GX1_LOCAL_WORLD_SIZE: 'two' }),
  GX1_COORDINATOR_PORT: () => discoverJob({ JOB_COMPLETION_INDEX: '0', GX1_WORLD_SIZE: '2', GX1_COORDINATOR_HOST: 'pod-0', GX1_COORDINATOR_PORT: '99999' }),
  GX1_SECRET: () => resolveSessionOptions(base, { GX1_SECRET: 'short' }),
  GX1_SECRET_FILE: () => resolveSessionOptions(base, { GX1_SECRET_FILE: '/nonexistent/secret' }),
  GX1_TLS_CERT: () => resolveSessionOptions(base, { GX1_TLS_CERT: '/nonexistent/cert.pem' }),
  GX1_TLS_KEY: () => resolveSessionOptions(base, { GX1_TLS_KEY: '/nonexistent/key.pem' }),
  GX1_TLS_CA: () => resolveSessionOptions(base, { GX1_TLS_CA: '/nonexistent/ca.pem' }),
  GX1_P2P_LISTEN_ADDR: () => endpoints({ GX1_P2P_LISTEN_ADDR: 'here' }),
  GX1_P2P_ADVERTISE_ADDR: () => endpoints({ GX1_P2P_ADVERTISE_ADDR: 'there' }),
  GX1_P2P_RAIL_LISTEN_ADDRS: () => endpoints({ GX1_P2P_RAIL_LISTEN_ADDRS: 'here' }),
  GX1_P2P_RAIL_ADVERTISE_ADDRS: () => endpoints({ GX1_P2P_RAIL_ADVERTISE_ADDRS: 'there' }),
  GX1_RING_ORDER: () => resolveTuning({}, 2, { GX1_RING_ORDER: '0,0' }),
  GX1_TOPOLOGY_LINKS: () => resolveTuning({}, 2, { GX1_TOPOLOGY_LINKS: '0-5:1:1' }),
  GX1_TOPOLOGY_GROUPS: () => resolveTuning({}, 2, { GX1_TOPOLOGY_GROUPS: '0;2' }),
  GX1_TOPOLOGY_RAIL_LINKS: () => resolveTuning({}, 2, { GX1_TOPOLOGY_RAIL_LINKS: '0@0-1:0:1' }),
  GX1_TOPOLOGY_AGGREGATE_LINKS: () => resolveTuning({}, 2, { GX1_TOPOLOGY_AGGREGATE_LINKS: 'lots' }),
  GX1_RAIL_ORDER: () => resolveTuning({}, 2, { GX1_RAIL_ORDER: '0' }, 2),
  // Read when the session opens, under the name the tuning carries.
  GX1_COLLECTIVE_AUTOTUNE_PROFILE: () => {
    const profile = resolveTuning({}, 2, { GX1_COLLECTIVE_AUTOTUNE_PROFILE: '/nonexistent/profile.json' }).autotuneProfile!;
    return readSetting(profile.setting, () => readAutotuneProfile(profile.path));
  },
  // Two directories for one rank's records.
  GX1_FLIGHT_RECORDER: () => flightRecordingFromEnvironment({ GX1_FLIGHT_RECORDER: '/tmp/a', GX1_TIMELINE: '/tmp/b' }),
  GX1_TIMELINE: () => flightRecordingFromEnvironment({ GX1_FLIGHT_RECORDER: '/tmp/a', GX1_TIMELINE: '/tmp/b' }),
  // The debug log is not refused (a process must be able to say what went wrong): it warns, naming it.
  GX1_DEBUG: () => {
    let said = '';
    DebugLog.fromEnvironment({ GX1_DEBUG: 'loud' }, (text) => (said += text));
    throw new ConfigurationError(said);
  },
};

/**
 * A host is any name: one that does not resolve fails naming it while the ranks wait for it
 * (launch/wait-for-host.ts), not at reading.
 */
const ANY_TEXT = new Set(['GX1_COORDINATOR_HOST']);

describe('readSettings', () => {
  it('refuses a bad value of every variable, naming it (the whole table: a new row is covered)', () => {
    for (const { variable, spec } of VARIABLES) {
      if (spec.parse === asText || spec.parse === trimmedText) {
        if (ANY_TEXT.has(variable)) continue;
        const use = REFUSED_WHERE_USED[variable];
        expect(use, `${variable} is read as text: say where a bad value is refused (REFUSED_WHERE_USED)`).toBeDefined();
        expect(refusal(use!), variable).toContain(variable);
        continue;
      }
      const settings = readSettings({ [variable]: 'not-a-value' });
      expect(() => settings[variable].value, variable).toThrow(ConfigurationError);
      expect(refusal(() => settings[variable].value), variable).toContain(variable);
    }
  });

  it('reads each value by its parser, with where it came from', () => {
    const settings = readSettings({ GX1_P2P_RAILS: ' 4 ', GX1_COLLECTIVE_TRANSPORT: 'coordinator', GX1_FAULT_TOLERANT: 'true', GX1_SPIN_US: ' ', PATH: '/bin' });
    expect(settings.GX1_P2P_RAILS).toMatchObject({ variable: 'GX1_P2P_RAILS', text: ' 4 ', source: 'environment', value: 4 });
    expect(settings.GX1_COLLECTIVE_TRANSPORT.value).toBe('tcp_host_staged');
    expect(settings.GX1_FAULT_TOLERANT.value).toBe(true);
    // Blank is the default, as unset.
    expect(settings.GX1_SPIN_US).toMatchObject({ source: 'default', value: 'auto' });
    expect(settings.GX1_DATA_PLANE).toMatchObject({ text: undefined, source: 'default', value: 'auto' });
    expect(settings.GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES.value).toBe(16 * 1024 * 1024);
    expect(settings.GX1_TOPOLOGY_PROBE_BYTES.value).toBeUndefined();
    expect(Object.keys(settings).sort()).toEqual(VARIABLES.map(({ variable }) => variable).sort());
  });

  it('is frozen, values too, and a refusal waits in the value it concerns', () => {
    const settings = readSettings({ GX1_TIMEOUT_MS: 'soon' });
    expect(Object.isFrozen(settings)).toBe(true);
    expect(Object.isFrozen(settings.GX1_P2P_RAILS)).toBe(true);
    expect(() => {
      (settings as unknown as Record<string, unknown>).GX1_P2P_RAILS = null;
    }).toThrow(TypeError);
    expect(() => settings.GX1_TIMEOUT_MS.value).toThrow('GX1_TIMEOUT_MS must be whole milliseconds, got "soon"');
    // Every other setting reads on.
    expect(settings.GX1_P2P_RAILS.value).toBe(1);
  });

  it("reads this process's variables once: later changes to process.env are not seen", () => {
    const name: VariableName = 'GX1_RING_THRESHOLD_BYTES';
    const before = process.env[name];
    const first = processSettings();
    try {
      process.env[name] = '12345';
      expect(processSettings()).toBe(first);
      expect(settingsOf()).toBe(first);
      expect(settingsOf(process.env)).toBe(first);
      expect(first[name].text).toBe(before);
      // Settings pass through; another environment is read afresh.
      expect(settingsOf(first)).toBe(first);
      expect(settingsOf({ [name]: '12345' })[name].value).toBe(12345);
    } finally {
      if (before === undefined) delete process.env[name];
      else process.env[name] = before;
    }
  });

  it('rxccl doctor shows the settings this process read, with their source, not a second reading', async () => {
    const name: VariableName = 'GX1_RING_CHANNELS';
    const before = process.env[name];
    const read = processSettings()[name];
    try {
      process.env[name] = '3';
      const shown = (await doctorReport()).settings.find((setting) => setting.variable === name);
      expect(shown).toEqual({ variable: name, value: read.source === 'environment' ? read.text!.trim() : null, source: read.source, options: ['ringChannels'] });
    } finally {
      if (before === undefined) delete process.env[name];
      else process.env[name] = before;
    }
  });

  it('an option wins over its variable, which is then not read (a bad one is not refused)', () => {
    const env = { GX1_P2P_RAILS: 'many', GX1_COLLECTIVE_TRANSPORT: 'pigeon', GX1_FAULT_TOLERANT: 'maybe', GX1_DATA_PLANE: 'c++', GX1_SINGLE_COPY: 'no', GX1_BUSY_POLL_US: 'soon', GX1_SPIN_US: 'soon' };
    const options = { ...base, rails: 2, transport: 'tcp_peer', faultTolerant: true, dataPlane: 'js', singleCopy: 'off', busyPollMicros: 5, spinMicros: 6 } as const;
    const resolved = resolveSessionOptions(options, env);
    expect(resolved).toMatchObject({ rails: 2, transport: 'tcp_peer', faultTolerant: true, dataPlane: 'js', singleCopy: 'off', busyPoll: 5, spin: 6 });
    expect(refusal(() => resolveSessionOptions(base, env))).toBe('GX1_P2P_RAILS must be an integer in 1..=64, got "many"');
  });
});
