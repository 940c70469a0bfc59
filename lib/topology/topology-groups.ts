import { ConfigurationError } from '../errors.js';
import { invalidEnvironment, isAuto, MAX_U32, parseUnsigned, rankOutOfRange, trimWhitespace } from './environment-values.js';

/**
 * Topology groups (GX1_TOPOLOGY_GROUPS): ranks that share fast links (one host, one switch), every
 * rank in exactly one group. Hierarchical collectives move data inside groups freely and between
 * them as little as they can. Groups keep the order they were given in, members too: the
 * reference's first member leads its group, and its group order is its leaders' ring.
 */
export type TopologyGroups = readonly (readonly number[])[];

/** What a session asks for: groups, or `auto`, to be inferred from the topology when the session opens. */
export type TopologyGroupsSetting = TopologyGroups | 'auto';

/** The reference scores automatic groupings at this payload (GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES). */
export const DEFAULT_GROUP_PAYLOAD_BYTES = 16 * 1024 * 1024;

function invalidHierarchy(message: string): ConfigurationError {
  return new ConfigurationError(`invalid collective hierarchy: ${message}`);
}

/**
 * Checks groups as the reference does, in its order: at least two groups, then each group in turn
 * (not empty; each rank in range and not seen before), then every rank covered. Returns a copy.
 */
export function validateTopologyGroups(worldSize: number, groups: TopologyGroups): number[][] {
  if (groups.length < 2) throw invalidHierarchy('requires at least two non-empty groups');
  const seen = new Uint8Array(worldSize);
  groups.forEach((group, index) => {
    if (group.length === 0) throw invalidHierarchy(`group ${index} is empty`);
    for (const rank of group) {
      if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize) throw rankOutOfRange(rank, worldSize);
      if (seen[rank]) throw invalidHierarchy(`rank ${rank} appears more than once`);
      seen[rank] = 1;
    }
  });
  const missing = [...seen.keys()].filter((rank) => !seen[rank]);
  if (missing.length > 0) throw invalidHierarchy(`does not cover ranks [${missing.join(',')}]`);
  return groups.map((group) => [...group]);
}

/**
 * Reads GX1_TOPOLOGY_GROUPS: `auto` (any case, trimmed), or groups separated by `;`, ranks by `,`,
 * each rank trimmed, blank ranks skipped ("0,1;2,3"); a group with no rank is an empty group.
 */
export function parseTopologyGroups(worldSize: number, value: string, name = 'GX1_TOPOLOGY_GROUPS'): TopologyGroupsSetting {
  if (isAuto(value)) return 'auto';
  const groups = value.split(';').map((group) =>
    group
      .split(',')
      .filter((rank) => trimWhitespace(rank) !== '')
      .map((rank) => {
        const parsed = parseUnsigned(trimWhitespace(rank), MAX_U32);
        if (parsed === undefined) throw invalidEnvironment(name, value);
        return parsed;
      }),
  );
  return validateTopologyGroups(worldSize, groups);
}

/** Groups as GX1_TOPOLOGY_GROUPS writes them: "0,1;2,3". */
export function groupsText(groups: TopologyGroups): string {
  return groups.map((group) => group.join(',')).join(';');
}
