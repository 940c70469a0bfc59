import { MAX_P2P_RAILS, MAX_TIMEOUT_MS } from '../transport/transport-kind.js';
import type { Flag } from './args.js';

/** `--rails`, checked here so that the message names the flag and its range. */
export const RAILS_FLAG = { kind: 'integer', value: 'R', min: 1, max: MAX_P2P_RAILS, help: `point-to-point rails per rank, 1..${MAX_P2P_RAILS} (default GX1_P2P_RAILS, else 1)` } as const satisfies Flag;

/** The coordinator settings that `launch` and `coordinator` share. */
export const COORDINATOR_FLAGS = {
  rails: RAILS_FLAG,
  transport: { kind: 'string', value: 'T', help: 'tcp_peer or tcp_host_staged (default GX1_COLLECTIVE_TRANSPORT, else tcp_peer)' },
  'collective-timeout': { kind: 'integer', value: 'MS', min: 1, max: MAX_TIMEOUT_MS, help: 'abort a collective still waiting for some rank after MS, on every transport and plane; the ranks get it as GX1_COLLECTIVE_TIMEOUT_MS (default 300000)' },
  'heartbeat-timeout': { kind: 'integer', value: 'MS', min: 1, max: MAX_TIMEOUT_MS, help: 'abort when a rank sends no heartbeat for MS (default: no lease)' },
} as const satisfies Record<string, Flag>;
