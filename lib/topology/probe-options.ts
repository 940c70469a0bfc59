import { ConfigurationError } from '../errors.js';
import { MAX_FRAME_PAYLOAD_BYTES } from '../protocol/constants.js';

/** How hard the topology probe measures each link (the reference's `TopologyProbeOptions`). */
export interface TopologyProbeOptions {
  /** Bytes of each bandwidth sample; one frame, so at most MAX_FRAME_PAYLOAD_BYTES. */
  readonly payloadBytes: number;
  /** One-byte sends timed per link and direction; the median is kept. */
  readonly latencyIterations: number;
  /** Payload sends timed per link and direction; the median is kept. */
  readonly bandwidthIterations: number;
  /** Untimed sends before each timed series, so connection set-up and slow start are not measured. */
  readonly warmupIterations: number;
}

export const DEFAULT_TOPOLOGY_PROBE_OPTIONS: TopologyProbeOptions = Object.freeze({
  payloadBytes: 1024 * 1024,
  latencyIterations: 16,
  bandwidthIterations: 3,
  warmupIterations: 1,
});

type MutableProbeOptions = { -readonly [K in keyof TopologyProbeOptions]: TopologyProbeOptions[K] };

/** Iteration counts above this would make a probe run for minutes: surely a typo. */
const MAX_PROBE_ITERATIONS = 10_000;

/** The environment variable that overrides each option. */
const PROBE_ENVIRONMENT: readonly (readonly [keyof TopologyProbeOptions, string])[] = [
  ['payloadBytes', 'GX1_TOPOLOGY_PROBE_BYTES'],
  ['latencyIterations', 'GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS'],
  ['bandwidthIterations', 'GX1_TOPOLOGY_PROBE_BANDWIDTH_ITERATIONS'],
  ['warmupIterations', 'GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS'],
];

/** What is wrong with one option's value by the reference's limits (its texts), or null. */
function refusalOf(field: keyof TopologyProbeOptions, value: number): string | null {
  if (!Number.isSafeInteger(value) || value < 0) return `topology probe ${field} must be a non-negative integer, got ${value}`;
  if (field === 'payloadBytes') return value === 0 || value > MAX_FRAME_PAYLOAD_BYTES ? `topology probe payload ${value} is outside 1..=${MAX_FRAME_PAYLOAD_BYTES}` : null;
  if (value === 0 && field !== 'warmupIterations') return 'topology probe latency and bandwidth iterations must be greater than zero';
  return value > MAX_PROBE_ITERATIONS ? `topology probe iteration counts must not exceed ${MAX_PROBE_ITERATIONS}` : null;
}

/**
 * Checks the options against the reference's limits and returns them. Non-integers are rejected
 * too: TypeScript callers can pass values the reference's `usize` fields could never hold. A
 * refusal of a value read from a variable starts with its name (`named`).
 */
export function validateProbeOptions(options: TopologyProbeOptions, named: ReadonlySet<keyof TopologyProbeOptions> = new Set()): TopologyProbeOptions {
  for (const [field, variable] of PROBE_ENVIRONMENT) {
    const refusal = refusalOf(field, options[field]);
    if (refusal !== null) throw new ConfigurationError(named.has(field) ? `${variable}: ${refusal}` : refusal);
  }
  return options;
}

/**
 * Fills the fields a caller left out (or set to undefined) with the defaults, then validates:
 * `session.probeTopology({ payloadBytes: 65536 })` keeps the default iteration counts.
 */
export function resolveProbeOptions(options: Partial<TopologyProbeOptions> = {}): TopologyProbeOptions {
  const resolved: MutableProbeOptions = { ...DEFAULT_TOPOLOGY_PROBE_OPTIONS };
  for (const [field] of PROBE_ENVIRONMENT) {
    const value = options[field];
    if (value !== undefined) resolved[field] = value;
  }
  return validateProbeOptions(resolved);
}

/**
 * Reads `GX1_TOPOLOGY_PROBE_BYTES`, `GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS`,
 * `GX1_TOPOLOGY_PROBE_BANDWIDTH_ITERATIONS` and `GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS`; an unset
 * variable keeps its default. Like the reference, surrounding whitespace and a leading `+` are
 * accepted, anything else that is not a decimal integer is an error naming the variable.
 */
export function probeOptionsFromEnvironment(
  env: Readonly<Record<string, string | undefined>> = process.env,
): TopologyProbeOptions {
  const options: MutableProbeOptions = { ...DEFAULT_TOPOLOGY_PROBE_OPTIONS };
  const named = new Set<keyof TopologyProbeOptions>();
  for (const [field, name] of PROBE_ENVIRONMENT) {
    const value = env[name];
    if (value === undefined) continue;
    named.add(field);
    const text = value.trim();
    const parsed = /^\+?[0-9]+$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(parsed)) {
      throw new ConfigurationError(`${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
    }
    options[field] = parsed;
  }
  return validateProbeOptions(options, named);
}
