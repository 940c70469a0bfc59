import { type Observable, Subject } from 'rxjs';
import type { EventLogger } from '../diagnostics/log-events.js';
import type { CoordinatorEvent, CoordinatorEventSink } from './coordinator-events.js';

/**
 * Where a coordinator's events go: to the debug log (written directly, first) and to the
 * subscribers of `events$`. The log is not a subscriber: at the default `warn` it wants only the
 * rare warnings, and a subscription would make every collective and message build its events.
 * `observed` says whether anyone takes the per-operation events (collectives, matches,
 * heartbeats): a subscriber of `events$`, or a log that writes them (`trace`).
 */
export class CoordinatorEventReporter implements CoordinatorEventSink {
  readonly events$: Observable<CoordinatorEvent>;
  private readonly subject = new Subject<CoordinatorEvent>();
  private readonly logsOperations: boolean;

  constructor(private readonly logger: EventLogger<CoordinatorEvent> | null) {
    this.events$ = this.subject.asObservable();
    this.logsOperations = logger !== null && (['collective-started', 'collective-completed', 'p2p-matched', 'heartbeat'] as const).some((type) => logger.logs(type));
  }

  get observed(): boolean {
    return this.logsOperations || this.subject.observed;
  }

  next(event: CoordinatorEvent): void {
    this.logger?.write(event);
    this.subject.next(event);
  }

  /** Ends `events$` (the job is over). */
  complete(): void {
    this.subject.complete();
  }
}
