import { availableParallelism } from 'node:os';
import type { MicrosSetting } from '../settings/micros-setting.js';

/**
 * What `GX1_OVERSUBSCRIBED_SPIN_US` of `auto` is: no spin. Where the ranks of a host outnumber its
 * cores, the peer a waiting rank needs usually has no core, and the waiter's spin (poll, then
 * sched_yield, native/data_links.cc) is what keeps it off one: 8 ranks on 2 cores spent about 3x the
 * time per 8 B all-reduce with the adaptive spin as sleeping at once on the ring's doorbell, and
 * 16 ranks 1.2-2x (bench/README.md, "Ranks outnumbering cores").
 */
export const DEFAULT_OVERSUBSCRIBED_SPIN_MICROS = 0;

/**
 * The spin a rank's native data plane uses (native/spin_budget.h; `auto`: adaptive), from the
 * `spinMicros` / `GX1_SPIN_US` setting `spin`. A number is used as it is. `auto` stays adaptive where
 * every process of the job on this host has a core of its own (`processesOnHost` at most `cores`,
 * the CPUs this process may run on: sched_getaffinity); where they outnumber the cores it is
 * `oversubscribed` (`GX1_OVERSUBSCRIBED_SPIN_US`, `auto`: `DEFAULT_OVERSUBSCRIBED_SPIN_MICROS`),
 * a fixed spin after every progress, as Open MPI gives up its core when oversubscribed
 * (`mpi_yield_when_idle`). Ranks of a job may decide differently: a rank's spin is its own.
 */
export function planeSpinMicros(spin: MicrosSetting, oversubscribed: MicrosSetting, processesOnHost: number, cores = availableParallelism()): MicrosSetting {
  if (spin !== 'auto' || processesOnHost <= cores) return spin;
  return oversubscribed === 'auto' ? DEFAULT_OVERSUBSCRIBED_SPIN_MICROS : oversubscribed;
}
