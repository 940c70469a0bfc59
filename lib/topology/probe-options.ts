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

const PROBE_FIELDS = Object.keys(DEFAULT_TOPOLOGY_PROBE_OPTIONS) as (keyof TopologyProbeOptions)[];

/** Iteration counts above this would make a probe run for minutes: surely a typo. */
const MAX_PROBE_ITERATIONS = 10_000;

/** What is wrong with one option's value by the reference's limits (its texts), or null. */
function refusalOf(field: keyof TopologyProbeOptions, value: number): string | null {
  if (!Number.isSafeInteger(value) || value < 0) return `topology probe ${field} must be a non-negative integer, got ${value}`;
  if (field === 'payloadBytes') return value === 0 || value > MAX_FRAME_PAYLOAD_BYTES ? `topology probe payload ${value} is outside 1..=${MAX_FRAME_PAYLOAD_BYTES}` : null;
  if (value === 0 && field !== 'warmupIterations') return 'topology probe latency and bandwidth iterations must be greater than zero';
  return value > MAX_PROBE_ITERATIONS ? `topology probe iteration counts must not exceed ${MAX_PROBE_ITERATIONS}` : null;
}

/**
 * Checks the options against the reference's limits and returns them. Non-integers are rejected
 * too: TypeScript callers can pass values the reference's `usize` fields could never hold.
 */
export function validateProbeOptions(options: TopologyProbeOptions): TopologyProbeOptions {
  for (const field of PROBE_FIELDS) {
    const refusal = refusalOf(field, options[field]);
    if (refusal !== null) throw new ConfigurationError(refusal);
  }
  return options;
}

/**
 * Fills the fields a caller left out (or set to undefined) with the defaults, then validates:
 * `session.probeTopology({ payloadBytes: 65536 })` keeps the default iteration counts.
 */
export function resolveProbeOptions(options: Partial<TopologyProbeOptions> = {}): TopologyProbeOptions {
  const resolved: MutableProbeOptions = { ...DEFAULT_TOPOLOGY_PROBE_OPTIONS };
  for (const field of PROBE_FIELDS) {
    const value = options[field];
    if (value !== undefined) resolved[field] = value;
  }
  return validateProbeOptions(resolved);
}

/**
 * The settings table's parser of the `GX1_TOPOLOGY_PROBE_*` variable standing for `field`
 * (undefined where unset: the default applies). Like the reference, surrounding whitespace and a
 * leading `+` are accepted; anything else that is not a decimal integer, or a value out of the
 * reference's limits, is refused naming the variable.
 */
export function probeVariable(field: keyof TopologyProbeOptions): (text: string | undefined, variable: string) => number | undefined {
  return (text, variable) => {
    if (text === undefined) return undefined;
    const trimmed = text.trim();
    const parsed = /^\+?[0-9]+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
    if (!Number.isSafeInteger(parsed)) throw new ConfigurationError(`${variable} must be a non-negative integer, got ${JSON.stringify(text)}`);
    const refusal = refusalOf(field, parsed);
    if (refusal !== null) throw new ConfigurationError(`${variable}: ${refusal}`);
    return parsed;
  };
}
