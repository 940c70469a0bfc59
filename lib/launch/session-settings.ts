import { ConfigurationError } from '../errors.js';
import type { Setting } from '../settings/read-settings.js';
import type { DiscoveredJob, EnvironmentReader } from './job-environment.js';

export type SessionSettings = Pick<DiscoveredJob, 'rails' | 'transport' | 'timeoutMs' | 'collectiveTimeoutMs' | 'heartbeatTimeoutMs'>;

/** The `GX1_*` settings that apply under every launcher (`rxccl launch` sets the first two), from the settings of the reader's environment. */
export function sessionSettings(reader: EnvironmentReader): SessionSettings {
  const { settings } = reader;
  return {
    rails: settings.GX1_P2P_RAILS.value,
    transport: settings.GX1_COLLECTIVE_TRANSPORT.value,
    timeoutMs: launcherSetting(reader, settings.GX1_TIMEOUT_MS),
    collectiveTimeoutMs: launcherSetting(reader, settings.GX1_COLLECTIVE_TIMEOUT_MS),
    heartbeatTimeoutMs: launcherSetting(reader, settings.GX1_HEARTBEAT_TIMEOUT_MS),
  };
}

/** A timeout's value, refused as the launcher's variables are: saying which launcher's environment it came from. */
function launcherSetting<T>(reader: EnvironmentReader, setting: Setting<T>): T {
  try {
    return setting.value;
  } catch (error) {
    throw error instanceof ConfigurationError ? reader.error(error.message) : error;
  }
}
