/** How many sockets this process holds open (Linux: /proc/self/fd; stdio pipes, listeners and links alike), else null. */
import { existsSync, readdirSync, readlinkSync } from 'node:fs';

export function openSockets(): number | null {
  if (!existsSync('/proc/self/fd')) return null;
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:');
    } catch {
      // Closed since the listing (the listing's own descriptor).
      return false;
    }
  }).length;
}
