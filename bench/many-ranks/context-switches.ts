import { readdirSync, readFileSync } from 'node:fs';

/** Context switches of every thread of this process so far (/proc/self/task/* /status), voluntary and involuntary. */
export function contextSwitches(): { voluntary: number; involuntary: number } {
  const total = { voluntary: 0, involuntary: 0 };
  for (const thread of readdirSync('/proc/self/task')) {
    // A thread may end between the listing and the read.
    let status: string;
    try {
      status = readFileSync(`/proc/self/task/${thread}/status`, 'utf8');
    } catch {
      continue;
    }
    total.voluntary += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)![1]);
    total.involuntary += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)![1]);
  }
  return total;
}
