import type { SocketAddressText } from '../transport/peer-endpoint-config.js';

/**
 * The job's ranks grouped by the host their first rail advertises (tcp_peer's endpoint table),
 * each group in rank order, groups in order of their first rank: ranks on one machine share its
 * memory bus and loopback, the fast-link domain GX1_TOPOLOGY_GROUPS=auto looks for first.
 */
export function hostGroups(table: readonly (readonly SocketAddressText[])[]): number[][] {
  const byHost = new Map<string, number[]>();
  table.forEach((endpoints, rank) => {
    const host = endpoints[0]!.host;
    byHost.set(host, [...(byHost.get(host) ?? []), rank]);
  });
  return [...byHost.values()];
}
