import { from as asyncIterableFrom } from 'ix/asynciterable/asynciterablex';
import { defer, lastValueFrom, type MonoTypeOperatorFunction, type Subject, tap } from 'rxjs';
import type { AsyncIterableX } from './ix-types.js';
import { ANY_RANK } from '../protocol/constants.js';
import { type DType, elementTypeOfDType } from '../protocol/element-type.js';
import { comesTagged, type Tensor, tensorFromBytes, type TensorOf, viewTensor } from '../tensor.js';
import type { Links } from '../transport/links/links.js';
import type { SessionFailure } from '../transport/session-failure.js';
import { checkRail, checkRank, checkShape, checkTag } from './arguments.js';
import type { EventLoopHold } from './event-loop-hold.js';
import type { SessionEvent } from './events.js';

/** The shape of a point-to-point receive: what the matching send must carry. */
export interface ReceiveShape<D extends DType = DType> {
  readonly dtype: D;
  readonly count: number;
}

/** Which rail a `send` or `receive` uses, where the caller chooses it. */
export interface RailOption {
  /** The P2P rail to use; default `tag % rails`. */
  readonly rail?: number;
}

/**
 * A session's tagged point-to-point messages: validated, on the rail the tag (or the caller)
 * picks, ended by the session's failure, reported on the session's events. Not ordered with the
 * collectives: they are multiplexed beside them.
 */
export class PointToPoint {
  constructor(
    private readonly links: Links,
    private readonly failure: SessionFailure,
    private readonly loop: EventLoopHold,
    private readonly events: Subject<SessionEvent>,
  ) {}

  async send(destination: number, tag: number | bigint, data: Tensor, options: RailOption | null): Promise<void> {
    checkRank(destination, this.links.worldSize, 'destination');
    const wireTag = checkTag(tag);
    const view = viewTensor(data);
    const rail = this.rail(wireTag, options);
    const started = performance.now();
    await lastValueFrom(
      defer(() => this.links.send(rail, destination, wireTag, view.bytes, { elementType: view.elementType, count: view.count })).pipe(
        this.failure.untilEnded(),
        this.loop.during(),
        this.reportFailure('send', destination, wireTag, rail),
      ),
      { defaultValue: undefined },
    );
    if (this.events.observed) {
      this.events.next({ type: 'p2p-sent', destination, tag: wireTag, rail, bytes: view.bytes.length, durationMs: performance.now() - started });
    }
  }

  async receive<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>, options: RailOption | null): Promise<TensorOf<D>> {
    if (source !== null) checkRank(source, this.links.worldSize, 'source');
    const wireTag = checkTag(tag);
    const { dtype, count } = checkShape(like);
    const rail = this.rail(wireTag, options);
    const started = performance.now();
    const payload = await lastValueFrom(
      defer(() => this.links.receive(rail, source ?? ANY_RANK, wireTag, { elementType: elementTypeOfDType(dtype), count })).pipe(
        this.failure.untilEnded(),
        this.loop.during(),
        this.reportFailure('receive', source, wireTag, rail),
      ),
    );
    if (this.events.observed) {
      this.events.next({ type: 'p2p-received', source, tag: wireTag, rail, bytes: payload.length, durationMs: performance.now() - started });
    }
    return tensorFromBytes(dtype, payload, comesTagged(dtype)) as TensorOf<D>;
  }

  /** Pull-based receives: each pull posts one, and leaving the loop posts no more. */
  messages<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>): AsyncIterableX<TensorOf<D>> {
    if (source !== null) checkRank(source, this.links.worldSize, 'source');
    checkTag(tag);
    checkShape(like);
    const self = this;
    return asyncIterableFrom(
      (async function* () {
        for (;;) yield await self.receive(source, tag, like, {});
      })(),
    );
  }

  /**
   * A failed send or receive as an event, before the caller sees the error: a rank that exits on
   * it at once (process.exit in a catch) has its flight record written all the same.
   */
  private reportFailure<T>(operation: 'send' | 'receive', peer: number | null, tag: bigint, rail: number): MonoTypeOperatorFunction<T> {
    return tap({ error: (error: unknown) => this.events.observed && this.events.next({ type: 'p2p-failed', operation, peer, tag, rail, error }) });
  }

  private rail(tag: bigint, options: RailOption | null): number {
    const rail = options?.rail;
    return rail === undefined ? Number(tag % BigInt(this.links.rails)) : checkRail(rail, this.links.rails);
  }
}
