import { ConfigurationError } from '../errors.js';
import { dataPlaneEngine } from '../kernels/addon.js';
import type { DataPlaneOffer } from '../transport/peer-endpoint-config.js';

/**
 * Who moves a tcp_peer session's collective data: `native`, the addon's data plane (a C++ thread
 * over data links of its own; docs/architecture.md), or `js`, the event loop over the mesh. A rank
 * offers the plane in its endpoint publication unless it is `js` (docs/protocol.md 8.3), and every
 * rank decides from the table alike (`usesNativeDataPlane`): the job runs it where every rank
 * offers it, on one host or many; ranks asking for `native` where some rank offers nothing make it
 * fail at set-up, naming them.
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

/**
 * Whether this rank's native data plane takes part in single copy (docs/architecture.md, "Single
 * copy on one host"): `auto`, where the ranks of one host agree on it, a receiver reads a large
 * payload straight out of its sender's memory (only the process that proved to be at the other end
 * of the link: docs/protocol.md 9.9), and where Yama's ptrace scope is 1 any process of this user
 * may read this rank while its session is open (the threat model there); `off`, this rank's
 * payloads all travel its links (its peers' to it too). Ranks may differ: each link is agreed on by
 * its two ends.
 */
export type SingleCopySetting = 'auto' | 'off';

export const SINGLE_COPY_SETTINGS: readonly SingleCopySetting[] = ['auto', 'off'];

/** `singleCopy` wins over `GX1_SINGLE_COPY`, else `auto`. */
export function resolveSingleCopy(option: string | undefined, variable: string | undefined): SingleCopySetting {
  const name = option !== undefined ? 'singleCopy' : 'GX1_SINGLE_COPY';
  const value = (option ?? variable ?? 'auto').trim() || 'auto';
  if (!(SINGLE_COPY_SETTINGS as readonly string[]).includes(value)) {
    throw new ConfigurationError(`${name} must be one of ${SINGLE_COPY_SETTINGS.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as SingleCopySetting;
}

/** The longest spin `spinMicros` / `GX1_SPIN_US` may ask for (native/spin_budget.h). */
export const MAX_SPIN_MICROS = 100_000;

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
