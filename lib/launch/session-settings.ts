import { chooseTransport, parseRails } from '../transport/transport-kind.js';
import type { DiscoveredJob, EnvironmentReader } from './job-environment.js';

export type SessionSettings = Pick<DiscoveredJob, 'rails' | 'transport' | 'timeoutMs' | 'collectiveTimeoutMs' | 'heartbeatTimeoutMs'>;

/** The `GX1_*` settings that apply under every launcher (`rxccl launch` sets the first two). */
export function sessionSettings(reader: EnvironmentReader): SessionSettings {
  return {
    rails: parseRails(reader.text('GX1_P2P_RAILS')),
    transport: chooseTransport(undefined, { GX1_COLLECTIVE_TRANSPORT: reader.text('GX1_COLLECTIVE_TRANSPORT') }),
    timeoutMs: positive(reader, 'GX1_TIMEOUT_MS'),
    collectiveTimeoutMs: positive(reader, 'GX1_COLLECTIVE_TIMEOUT_MS'),
    heartbeatTimeoutMs: positive(reader, 'GX1_HEARTBEAT_TIMEOUT_MS'),
  };
}

function positive(reader: EnvironmentReader, name: string): number | undefined {
  const value = reader.optionalInteger(name);
  if (value === 0) throw reader.error(`${name} must be greater than zero, got 0`);
  return value;
}
