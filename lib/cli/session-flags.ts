import type { Flag } from './args.js';

/** The coordinator settings that `launch` and `coordinator` share. */
export const COORDINATOR_FLAGS = {
  rails: { kind: 'integer', value: 'R', min: 1, help: 'point-to-point rails per rank (default 1)' },
  transport: { kind: 'string', value: 'T', help: 'tcp_host_staged (default) or tcp_peer' },
  'collective-timeout': { kind: 'integer', value: 'MS', min: 1, help: 'abort a collective some rank has not joined after MS (default 300000)' },
  'heartbeat-timeout': { kind: 'integer', value: 'MS', min: 1, help: 'abort when a rank sends no heartbeat for MS (default: no lease)' },
} as const satisfies Record<string, Flag>;
