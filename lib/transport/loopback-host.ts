import { isIP } from 'node:net';

/** Whether `host` names this machine's loopback (`localhost`, `::1`, 127/8, IPv4-mapped too). */
export function isLoopbackHost(host: string): boolean {
  const address = host.startsWith('::ffff:') ? host.slice(7) : host;
  if (address === 'localhost' || address === '::1') return true;
  return isIP(address) === 4 && address.startsWith('127.');
}
