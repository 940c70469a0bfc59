import { ConfigurationError } from '../errors.js';
import { dataPlaneEngine } from '../kernels/addon.js';

/**
 * Who moves a tcp_peer session's collective data: `native`, the addon's data plane (a C++ thread
 * over data links of its own; docs/architecture.md), or `js`, the event loop over the mesh. Every
 * rank of a job must use the same (a rank that does not refuses the others' data links by name).
 * `auto` is `native` where every rank of the job advertises this rank's host (one machine: one
 * install, so every rank decides alike from the endpoint table) and the addon loads, else `js`.
 */
export type DataPlaneSetting = 'native' | 'js' | 'auto';

export const DATA_PLANE_SETTINGS: readonly DataPlaneSetting[] = ['auto', 'native', 'js'];

/**
 * `dataPlane` wins over `GX1_DATA_PLANE`, else `auto`. `native` needs the addon (built on install)
 * and no TLS: the data links would carry the job's data in the clear; with TLS or without the
 * addon, `auto` is `js`.
 */
export function resolveDataPlane(option: string | undefined, variable: string | undefined, tls: boolean, available: () => boolean = () => dataPlaneEngine() !== null): DataPlaneSetting {
  const name = option !== undefined ? 'dataPlane' : 'GX1_DATA_PLANE';
  const value = (option ?? variable ?? 'auto').trim();
  if (!(DATA_PLANE_SETTINGS as readonly string[]).includes(value)) {
    throw new ConfigurationError(`${name} must be one of ${DATA_PLANE_SETTINGS.join(', ')}, got ${JSON.stringify(value)}`);
  }
  if (value === 'js') return 'js';
  if (value === 'auto') return !tls && available() ? 'auto' : 'js';
  if (tls) throw new ConfigurationError(`${name}=native cannot be used with TLS: its data links are plain TCP (use js, or no TLS)`);
  if (!available()) {
    throw new ConfigurationError(`${name}=native needs the native addon, which is not built or does not load here (npm rebuild rxccl; Linux only)`);
  }
  return 'native';
}

/** Whether a session uses the native data plane, once the endpoint table says who shares its host. */
export function usesNativeDataPlane(setting: DataPlaneSetting, processesOnHost: number, worldSize: number): boolean {
  return setting === 'native' || (setting === 'auto' && processesOnHost === worldSize);
}
