/** What a BusyWindow polls with (tests pass a fake one). */
export interface PollClock {
  now(): number;
  immediate(turn: () => void): void;
}

export const REAL_CLOCK: PollClock = { now: () => performance.now(), immediate: (turn) => void setImmediate(turn) };

/**
 * Keeps this process's event loop turning for a while: one `setImmediate` after another, so libuv
 * polls its sockets without blocking, until `windowMs` after the last `open()`. Data that comes
 * within the window is seen at once, instead of after the wake-up of a thread sleeping on a halted
 * core (tens of microseconds a hop on a VM, docs/architecture.md); past it the loop sleeps as
 * usual, so a long wait costs no CPU.
 *
 * With `yieldCpu` (the addon's sched_yield), each turn also offers the core to any other runnable
 * thread: the core stays awake for this process without keeping it from the processes it waits
 * for, which matters where there are more of them than cores (Open MPI yields when oversubscribed
 * for the same reason).
 */
export class BusyWindow {
  private until = 0;
  private turning = false;

  constructor(
    readonly windowMs: number,
    private readonly yieldCpu: (() => void) | null = null,
    private readonly clock: PollClock = REAL_CLOCK,
    /** Whether to go on turning (besides the window): an EventLoopHold stops with its last operation. */
    private readonly wanted: () => boolean = () => true,
  ) {}

  /** Starts the window, or extends it to `windowMs` from now. */
  open(): void {
    if (this.windowMs <= 0) return;
    this.until = this.clock.now() + this.windowMs;
    if (this.turning) return;
    this.turning = true;
    this.clock.immediate(this.turn);
  }

  private readonly turn = (): void => {
    if (!this.wanted() || this.clock.now() >= this.until) {
      this.turning = false;
      return;
    }
    this.yieldCpu?.();
    this.clock.immediate(this.turn);
  };
}
