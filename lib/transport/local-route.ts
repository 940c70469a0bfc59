import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';

/**
 * The local address this host's connections to `host` leave from, as the system routes them: what
 * a rank's control connection to a coordinator there would bind, and so the interface its peer
 * listener takes by default (peer-endpoint-config.ts). Asked of the routing table through a UDP
 * socket connected there, which sends nothing. Rejects where `host` does not resolve or no route
 * leads there.
 */
export async function localAddressToward(host: string, port: number): Promise<string> {
  const { address, family } = await lookup(host);
  const socket = createSocket(family === 6 ? 'udp6' : 'udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(port, address, () => resolve());
    });
    return socket.address().address;
  } finally {
    socket.close();
  }
}

/** The name of the interface that holds `address` (e.g. `lo`, `eth0`), or null where none does. */
export function interfaceHolding(address: string, interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces()): string | null {
  const bare = address.replace(/%.*$/, '');
  for (const [name, entries] of Object.entries(interfaces)) {
    if (entries?.some((entry) => entry.address === bare)) return name;
  }
  return null;
}
