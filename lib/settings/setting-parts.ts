import type { TopologyProbeOptions } from '../topology/probe-options.js';
import type { SecretVariables } from '../transport/job-secret.js';
import type { PeerEndpointVariables } from '../transport/peer-endpoint-config.js';
import type { TlsVariables } from '../transport/tls-settings.js';
import type { Settings } from './read-settings.js';

/**
 * The parts of the settings the transport layer reads (it sits below the settings, so it takes
 * their texts rather than the settings object): the secret, TLS files and peer endpoints; and the
 * topology probe's (below the settings too), as values.
 */

export function secretVariables(settings: Settings): SecretVariables {
  return { inline: settings.GX1_SECRET.text, file: settings.GX1_SECRET_FILE.text };
}

export function tlsVariables(settings: Settings): TlsVariables {
  return { cert: settings.GX1_TLS_CERT.text, key: settings.GX1_TLS_KEY.text, ca: settings.GX1_TLS_CA.text };
}

export function peerEndpointVariables(settings: Settings): PeerEndpointVariables {
  return {
    listen: settings.GX1_P2P_LISTEN_ADDR.text,
    advertise: settings.GX1_P2P_ADVERTISE_ADDR.text,
    railListen: settings.GX1_P2P_RAIL_LISTEN_ADDRS.text,
    railAdvertise: settings.GX1_P2P_RAIL_ADVERTISE_ADDRS.text,
  };
}

/** The `GX1_TOPOLOGY_PROBE_*` values, undefined where unset (`resolveProbeOptions` keeps the default there). */
export function probeVariables(settings: Settings): Partial<TopologyProbeOptions> {
  return {
    payloadBytes: settings.GX1_TOPOLOGY_PROBE_BYTES.value,
    latencyIterations: settings.GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS.value,
    bandwidthIterations: settings.GX1_TOPOLOGY_PROBE_BANDWIDTH_ITERATIONS.value,
    warmupIterations: settings.GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS.value,
  };
}
