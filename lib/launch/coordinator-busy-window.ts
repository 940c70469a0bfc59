import { yieldCpu } from '../kernels/addon.js';
import { type Environment, type Settings, settingsOf } from '../settings/read-settings.js';
import { BusyWindow } from '../transport/busy-window.js';

/**
 * How long the coordinator keeps its event loop turning after each frame it routes, by default.
 * A staged collective is two hops through the coordinator; on a VM a hop that wakes a sleeping
 * process on a halted core pays tens of microseconds in the writer's write(2). 500 µs spans the
 * gap between back-to-back small collectives, so the coordinator's core stays awake while they
 * come; it yields that core on every turn, so the ranks it waits for lose nothing.
 */
export const DEFAULT_COORDINATOR_BUSY_POLL_MICROS = 500;

/**
 * The coordinator's busy window (`CoordinatorOptions.busyWindow`) from `GX1_COORDINATOR_BUSY_POLL_US`:
 * microseconds 0..100000 (0: none), `auto` or unset for the default. None where the native addon
 * does not load: without its yield a polling coordinator would take the cores its ranks need.
 */
export function coordinatorBusyWindow(env: Settings | Environment, yielder: () => (() => void) | null = yieldCpu): BusyWindow | null {
  const setting = settingsOf(env).GX1_COORDINATOR_BUSY_POLL_US.value;
  const micros = setting === 'auto' ? DEFAULT_COORDINATOR_BUSY_POLL_MICROS : setting;
  if (micros === 0) return null;
  const offer = yielder();
  return offer === null ? null : new BusyWindow(micros / 1000, offer);
}
