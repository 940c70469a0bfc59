/**
 * The clock one simulated process sees: the job's virtual clock, until the process is gone. Its
 * timers then do nothing and stop repeating (an `interval` of a stopped rank's failure detector
 * must not tick on in the next generation of the job, nor keep the simulation from finding a
 * stuck rank), as a process's timers end with it.
 */
import type { SchedulerAction, SchedulerLike, Subscription } from 'rxjs';

export function processClock(clock: SchedulerLike, alive: () => boolean): SchedulerLike {
  return {
    now: () => clock.now(),
    schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T): Subscription {
      return clock.schedule<T>(
        function (this: SchedulerAction<T>, current?: T) {
          if (alive()) work.call(this, current);
        },
        delay,
        state,
      );
    },
  };
}
