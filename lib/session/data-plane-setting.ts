import { ConfigurationError } from '../errors.js';
import { dataPlaneEngine } from '../kernels/addon.js';
import type { DataPlaneOffer } from '../transport/peer-endpoint-config.js';
import {
  DATA_PLANE_SETTINGS,
  type DataPlaneSetting,
  SHARED_MEMORY_SETTINGS,
  type SharedMemorySetting,
  SINGLE_COPY_SETTINGS,
  type SingleCopySetting,
} from '../settings/plane-settings.js';
import { checkedName } from '../settings/variable-parsers.js';

/** A rank's data plane setting, and why it is what it is (`rxccl doctor` prints it). */
export interface ResolvedDataPlane {
  readonly setting: DataPlaneSetting;
  readonly reason: string;
}

/**
 * `dataPlane` wins over `GX1_DATA_PLANE` (`variable`, as the settings read it, read only without
 * the option), else `auto`. `native` needs the addon (built on install)
 * and no TLS: the data links would carry the job's data in the clear; with TLS or without the
 * addon, `auto` is `js`, and the reason says which.
 */
export function resolveDataPlane(
  option: string | undefined,
  variable: { readonly value: DataPlaneSetting },
  tls: boolean,
  available: () => boolean = () => dataPlaneEngine() !== null,
): ResolvedDataPlane {
  const name = option !== undefined ? 'dataPlane' : 'GX1_DATA_PLANE';
  const value = option !== undefined ? checkedName(DATA_PLANE_SETTINGS, option.trim(), name) : variable.value;
  if (value === 'js') return { setting: 'js', reason: `${name}=js` };
  if (value === 'auto') {
    if (tls) return { setting: 'js', reason: 'TLS is set: the data links would carry the data in the clear' };
    if (!available()) return { setting: 'js', reason: process.platform !== 'linux' ? `the native data plane is Linux's; this is ${process.platform}` : 'the native addon does not load' };
    return { setting: 'auto', reason: 'offered: the job runs it where every rank offers it' };
  }
  if (tls) throw new ConfigurationError(`${name}=native cannot be used with TLS: its data links are plain TCP (use js, or no TLS)`);
  if (!available()) {
    throw new ConfigurationError(`${name}=native needs the native addon, which is not built or does not load here (npm rebuild rxccl; Linux only)`);
  }
  return { setting: 'native', reason: `asked for (${name}=native): every rank must offer it` };
}

/** `singleCopy` wins over `GX1_SINGLE_COPY` (`variable`, as the settings read it, read only without the option), else `auto`. */
export function resolveSingleCopy(option: string | undefined, variable: { readonly value: SingleCopySetting }): SingleCopySetting {
  return resolveAutoOff(option, variable, SINGLE_COPY_SETTINGS, 'singleCopy');
}

/** `sharedMemory` wins over `GX1_SHARED_MEMORY` (read only without the option), else `auto`. */
export function resolveSharedMemory(option: string | undefined, variable: { readonly value: SharedMemorySetting }): SharedMemorySetting {
  return resolveAutoOff(option, variable, SHARED_MEMORY_SETTINGS, 'sharedMemory');
}

function resolveAutoOff<T extends 'auto' | 'off'>(option: string | undefined, variable: { readonly value: T }, names: readonly T[], optionName: string): T {
  return option === undefined ? variable.value : checkedName(names, option.trim() || 'auto', optionName);
}

/** What a rank publishes of its setting: `js` offers nothing. */
export function dataPlaneOffer(setting: DataPlaneSetting): DataPlaneOffer | null {
  return setting === 'js' ? null : setting;
}

/**
 * Whether the job runs the native data plane, decided alike on every rank from the endpoint
 * table's offers: where every rank offers it, wherever the ranks are (across hosts its data links
 * are TCP connections like the mesh's). Ranks asking for it (`native`) where others do not offer
 * it cannot have it: every rank fails with the same error, naming both.
 */
export function usesNativeDataPlane(offers: readonly (DataPlaneOffer | null)[]): boolean {
  const asking = offers.flatMap((offer, rank) => (offer === 'native' ? [rank] : []));
  const without = offers.flatMap((offer, rank) => (offer === null ? [rank] : []));
  if (without.length > 0 && asking.length > 0) {
    throw new ConfigurationError(
      `ranks [${asking.join(',')}] ask for the native data plane (GX1_DATA_PLANE=native), but ranks [${without.join(',')}] do not offer it ` +
        '(GX1_DATA_PLANE=js, TLS, no native addon, or another GX1 implementation): use auto or js on every rank',
    );
  }
  return without.length === 0;
}
