import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';
import { MAX_FRAME_PAYLOAD_BYTES } from '../../lib/protocol/index.js';
import {
  DEFAULT_TOPOLOGY_PROBE_OPTIONS,
  resolveProbeOptions,
  validateProbeOptions,
} from '../../lib/topology/index.js';
import { readSettings } from '../../lib/settings/read-settings.js';
import { probeVariables } from '../../lib/settings/setting-parts.js';

/** The probe options of `env`'s `GX1_TOPOLOGY_PROBE_*` variables, as a rank's `probeTopology()` takes them. */
const probeOptionsFromEnvironment = (env: Record<string, string>) => resolveProbeOptions(probeVariables(readSettings(env)));

describe('topology probe options', () => {
  it('default as the reference: 1 MiB, 16 latency, 3 bandwidth, 1 warm-up iteration', () => {
    expect(DEFAULT_TOPOLOGY_PROBE_OPTIONS).toEqual({
      payloadBytes: 1024 * 1024,
      latencyIterations: 16,
      bandwidthIterations: 3,
      warmupIterations: 1,
    });
    expect(probeOptionsFromEnvironment({})).toEqual(DEFAULT_TOPOLOGY_PROBE_OPTIONS);
  });

  it('read each GX1_TOPOLOGY_PROBE_* variable, trimmed, a leading + allowed', () => {
    expect(
      probeOptionsFromEnvironment({
        GX1_TOPOLOGY_PROBE_BYTES: ' 65536 ',
        GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS: '+4',
        GX1_TOPOLOGY_PROBE_BANDWIDTH_ITERATIONS: '2',
        GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS: '0',
      }),
    ).toEqual({ payloadBytes: 65536, latencyIterations: 4, bandwidthIterations: 2, warmupIterations: 0 });
  });

  it('name the variable that is not a non-negative integer', () => {
    for (const value of ['', '-1', '1.5', 'lots', '1e3', '99999999999999999999']) {
      expect(() => probeOptionsFromEnvironment({ GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS: value })).toThrow(
        `GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS must be a non-negative integer, got ${JSON.stringify(value)}`,
      );
    }
  });

  it('enforce the reference limits with its messages', () => {
    const valid = DEFAULT_TOPOLOGY_PROBE_OPTIONS;
    expect(() => validateProbeOptions({ ...valid, payloadBytes: 0 })).toThrow(
      `topology probe payload 0 is outside 1..=${MAX_FRAME_PAYLOAD_BYTES}`,
    );
    expect(() => validateProbeOptions({ ...valid, payloadBytes: MAX_FRAME_PAYLOAD_BYTES + 1 })).toThrow(
      ConfigurationError,
    );
    expect(validateProbeOptions({ ...valid, payloadBytes: MAX_FRAME_PAYLOAD_BYTES }).payloadBytes).toBe(
      MAX_FRAME_PAYLOAD_BYTES,
    );
    expect(() => validateProbeOptions({ ...valid, latencyIterations: 0 })).toThrow(
      'topology probe latency and bandwidth iterations must be greater than zero',
    );
    expect(() => validateProbeOptions({ ...valid, bandwidthIterations: 0 })).toThrow(/greater than zero/);
    expect(() => validateProbeOptions({ ...valid, warmupIterations: 10_001 })).toThrow(
      'topology probe iteration counts must not exceed 10000',
    );
    expect(() => probeOptionsFromEnvironment({ GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS: '10001' })).toThrow(
      /must not exceed 10000/,
    );
    expect(() => validateProbeOptions({ ...valid, warmupIterations: 0.5 })).toThrow(
      'topology probe warmupIterations must be a non-negative integer, got 0.5',
    );
    expect(validateProbeOptions({ ...valid, warmupIterations: 10_000 }).warmupIterations).toBe(10_000);
  });

  it('resolve a partial set over the defaults', () => {
    expect(resolveProbeOptions({ payloadBytes: 4096, warmupIterations: undefined })).toEqual({
      ...DEFAULT_TOPOLOGY_PROBE_OPTIONS,
      payloadBytes: 4096,
    });
    expect(() => resolveProbeOptions({ latencyIterations: 0 })).toThrow(ConfigurationError);
  });
});
