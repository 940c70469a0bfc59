import { ConfigurationError, readSetting } from '../errors.js';

/** How collective and point-to-point data travel between ranks. */
export type CollectiveTransport = 'tcp_host_staged' | 'tcp_peer';

/**
 * The transport when neither the options nor `GX1_COLLECTIVE_TRANSPORT` name one: the direct
 * mesh, many times faster than staging every byte through the coordinator (the reference
 * design's default, `tcp_host_staged`, is one setting away; it needs only the coordinator's port
 * reachable, where `tcp_peer` needs every rank to reach every other's peer port).
 */
export const DEFAULT_TRANSPORT: CollectiveTransport = 'tcp_peer';

/** What a rank asked for: its transport, and the setting that chose it (null: nothing did, the default). */
export interface RankTransport {
  readonly transport: CollectiveTransport;
  readonly chosenBy: string | null;
}

/**
 * The transport the options give (chosen by `transport`), else `variable`'s
 * (`GX1_COLLECTIVE_TRANSPORT` as the settings read it: chosen by it where it is set, by nothing
 * where its default applies). The variable's value is read, and a bad one refused, only without
 * the option.
 */
export function resolveTransport(
  option: CollectiveTransport | string | undefined,
  variable: { readonly variable: string; readonly value: CollectiveTransport; readonly source: 'environment' | 'default' },
): RankTransport {
  if (option !== undefined) return { transport: parseTransport(String(option), 'transport'), chosenBy: 'transport' };
  return { transport: variable.value, chosenBy: variable.source === 'environment' ? variable.variable : null };
}

export const MAX_P2P_RAILS = 64;

/** Parses a transport name with the reference design's accepted spellings. */
export function parseTransport(value: string, source = 'GX1_COLLECTIVE_TRANSPORT'): CollectiveTransport {
  switch (value.trim().toLowerCase()) {
    case 'coordinator':
    case 'tcp_coordinator':
    case 'tcp_host_staged':
      return 'tcp_host_staged';
    case 'peer':
    case 'tcp_peer':
      return 'tcp_peer';
    default:
      throw new ConfigurationError(`${source} must be tcp_host_staged or tcp_peer, got ${JSON.stringify(value)}`);
  }
}

export function validateRails(rails: number): number {
  if (!Number.isInteger(rails) || rails < 1 || rails > MAX_P2P_RAILS) {
    throw new ConfigurationError(`point-to-point rail count ${rails} is outside 1..=${MAX_P2P_RAILS}`);
  }
  return rails;
}

/** Parses `GX1_P2P_RAILS` (default 1). */
export function parseRails(value: string | undefined, source = 'GX1_P2P_RAILS'): number {
  if (value === undefined) return 1;
  const text = value.trim();
  if (!/^\d+$/.test(text)) {
    throw new ConfigurationError(`${source} must be an integer in 1..=${MAX_P2P_RAILS}, got ${JSON.stringify(value)}`);
  }
  return readSetting(source, () => validateRails(Number(text)));
}

export function validateWorldSize(worldSize: number): number {
  if (!Number.isInteger(worldSize) || worldSize < 1 || worldSize > 0xffffffff) {
    throw new ConfigurationError(`TCP collective world size ${worldSize} is outside 1..=${0xffffffff}`);
  }
  return worldSize;
}

/**
 * The longest delay Node's timers honour (2^31 - 1 ms, about 24.8 days): a longer one is silently
 * set to 1 ms, so delays that come from outside are clamped to it (as good as never timing out).
 */
export const MAX_TIMER_DELAY_MS = 0x7fff_ffff;

/** The longest timeout a caller may configure: a timer's limit, less room for response grace. */
export const MAX_TIMEOUT_MS = MAX_TIMER_DELAY_MS - 1_000;

export function validateTimeout(ms: number, what: string): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new ConfigurationError(`${what} must be greater than zero, got ${ms}`);
  if (ms > MAX_TIMEOUT_MS) throw new ConfigurationError(`${what} ${ms} ms exceeds the longest supported timeout, ${MAX_TIMEOUT_MS} ms`);
  return ms;
}
