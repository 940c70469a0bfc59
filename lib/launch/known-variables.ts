import { didYouMean } from '../diagnostics/did-you-mean.js';

/**
 * Every `GX1_*` variable rxccl reads (spec/launch/known-variables.spec.ts checks this list against
 * the sources), so that a misspelt one is named instead of silently ignored.
 */
export const KNOWN_VARIABLES: readonly string[] = [
  'GX1_BUSY_POLL_US',
  'GX1_COLLECTIVE_ALGORITHM',
  'GX1_COLLECTIVE_TIMEOUT_MS',
  'GX1_COLLECTIVE_TRANSPORT',
  'GX1_COORDINATOR',
  'GX1_COORDINATOR_BUSY_POLL_US',
  'GX1_COORDINATOR_HOST',
  'GX1_COORDINATOR_PORT',
  'GX1_COLLECTIVE_AUTOTUNE_PROFILE',
  'GX1_DATA_PLANE',
  'GX1_DIRECT_BANDWIDTH_MBPS',
  'GX1_DIRECT_LATENCY_NS',
  'GX1_DEBUG',
  'GX1_FAULT_TOLERANT',
  'GX1_FLIGHT_RECORDER',
  'GX1_FLIGHT_RECORDER_EVENTS',
  'GX1_HEARTBEAT_TIMEOUT_MS',
  'GX1_LOCAL_RANK',
  'GX1_LOCAL_WORLD_SIZE',
  'GX1_P2P_ADVERTISE_ADDR',
  'GX1_P2P_LISTEN_ADDR',
  'GX1_P2P_RAILS',
  'GX1_P2P_RAIL_ADVERTISE_ADDRS',
  'GX1_P2P_RAIL_LISTEN_ADDRS',
  'GX1_P2P_UNMATCHED_BYTES',
  'GX1_RAIL_ORDER',
  'GX1_RANK',
  'GX1_RING_CHANNELS',
  'GX1_RING_ORDER',
  'GX1_RING_THRESHOLD_BYTES',
  'GX1_SECRET',
  'GX1_SECRET_FILE',
  'GX1_SINGLE_COPY',
  'GX1_SPIN_US',
  'GX1_TIMELINE',
  'GX1_TIMEOUT_MS',
  'GX1_TLS_CA',
  'GX1_TLS_CERT',
  'GX1_TLS_KEY',
  'GX1_TOPOLOGY_AGGREGATE_LINKS',
  'GX1_TOPOLOGY_GROUPS',
  'GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES',
  'GX1_TOPOLOGY_LINKS',
  'GX1_TOPOLOGY_PROBE_BANDWIDTH_ITERATIONS',
  'GX1_TOPOLOGY_PROBE_BYTES',
  'GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS',
  'GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS',
  'GX1_TOPOLOGY_RAIL_LINKS',
  'GX1_UNIQUE_ID',
  'GX1_WORLD_SIZE',
];

/**
 * The `GX1_*` variables of `env` that rxccl does not read, each with the known one it most likely
 * means: a typo (`GX1_RIGN_ORDER`), or a shortened name whose words all belong to one known name
 * (`GX1_TRANSPORT` -> `GX1_COLLECTIVE_TRANSPORT`); null when nothing fits.
 */
export function unknownVariables(env: Readonly<Record<string, string | undefined>>): { name: string; meant: string | null }[] {
  return Object.keys(env)
    .filter((name) => name.startsWith('GX1_') && !KNOWN_VARIABLES.includes(name))
    .sort()
    .map((name) => ({ name, meant: didYouMean(name, KNOWN_VARIABLES) ?? sharingWords(name) }));
}

/** The one known name that has every word of `name` (words split at `_`), if exactly one has. */
function sharingWords(name: string): string | null {
  const words = name.split('_').slice(1);
  const fits = KNOWN_VARIABLES.filter((known) => words.every((word) => known.split('_').includes(word)));
  return fits.length === 1 ? fits[0]! : null;
}

let warned = false;

/**
 * Warns once per process (`RXCCL_UNKNOWN_VARIABLE`) about `GX1_*` variables rxccl does not read,
 * which would otherwise be silently ignored.
 */
export function warnUnknownVariables(env: Readonly<Record<string, string | undefined>>): void {
  if (warned) return;
  const unknown = unknownVariables(env);
  if (unknown.length === 0) return;
  warned = true;
  const named = unknown.map(({ name, meant }) => (meant === null ? name : `${name} (did you mean ${meant}?)`));
  process.emitWarning(`rxccl ignores ${named.join(', ')}: no such setting (the GX1_* variables: README.md)`, { code: 'RXCCL_UNKNOWN_VARIABLE' });
}
