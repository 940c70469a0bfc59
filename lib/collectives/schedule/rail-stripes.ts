import { type Dependency, producedBytes, type Producers, type Schedule, type ScheduledFold, type ScheduledMessage, type ScheduledSend, type Span, spanOfDependency } from './schedule.js';

/**
 * The unit a message is cut at when it goes over several rails: a stripe is a run of whole units
 * (1 MiB, a multiple of every element width, so no element is ever split).
 */
export const STRIPE_UNIT_BYTES = 1 << 20;

/**
 * Where a message (or a fold) of `bytes` is cut when there are `rails` data links per pair
 * (docs/protocol.md 9.9): into min(rails, ceil(bytes / 1 MiB)) stripes (one at the least), stripe
 * k starting at unit floor(k * units / stripes). Returns the stripes' starts and the end. Both
 * ends of a message cut it alike from its size alone. (`unitBytes` is for tests: small shapes
 * with many stripes.)
 */
export function stripeCuts(bytes: number, rails: number, unitBytes = STRIPE_UNIT_BYTES): number[] {
  const units = Math.ceil(bytes / unitBytes);
  const stripes = Math.max(1, Math.min(rails, units));
  const cuts = Array.from({ length: stripes }, (_, stripe) => Math.floor((stripe * units) / stripes) * unitBytes);
  cuts.push(bytes);
  return cuts;
}

/**
 * The rail part `part` of a message on `channel` takes: railOrder[(channel + part) mod rails] (0,
 * 1, ... when null). Both planes spread a message so: the JS plane its pieces, the native plane
 * its stripes.
 */
export function railOfPart(channel: number, part: number, rails: number, railOrder: readonly number[] | null): number {
  // The channel as the tags carry it (mod 64): a hierarchical schedule's share index may be larger.
  const slot = ((channel % 64) + part) % rails;
  return railOrder === null ? slot : railOrder[slot]!;
}

/** Where each item's first stripe lands once every item before it was cut at `cuts`. */
function firstStripes(cuts: readonly (readonly number[])[]): number[] {
  const firsts: number[] = [];
  let next = 0;
  for (const of of cuts) {
    firsts.push(next);
    next += of.length - 1;
  }
  return firsts;
}

/**
 * `schedule` for the native plane with `rails` data links per pair: every message goes as its
 * stripes (`stripeCuts`), stripe k on the rail of part k (`railOfPart`); every fold is cut alike,
 * and stripe k of anything waits for stripe k of what it waited for (a dependency covers as many
 * bytes as its dependent, so both are cut at the same places); a stripe of what waits for
 * `Producers` waits for the stripes of theirs that hold its bytes. Stripes keep their message's
 * order on each rail, so both ends of every data link still agree on what comes next. One rail:
 * the schedule.
 */
export function stripeOverRails(schedule: Schedule, rails: number, railOrder: readonly number[] | null, unitBytes = STRIPE_UNIT_BYTES): Schedule {
  if (rails === 1) return schedule;
  const cutsOf = {
    send: schedule.sends.map((send) => stripeCuts(send.span.bytes, rails, unitBytes)),
    receive: schedule.receives.map((receive) => stripeCuts(receive.span.bytes, rails, unitBytes)),
    fold: schedule.folds.map((fold) => stripeCuts(fold.target.bytes, rails, unitBytes)),
  };
  const first = { send: firstStripes(cutsOf.send), receive: firstStripes(cutsOf.receive), fold: firstStripes(cutsOf.fold) };
  const kindOf = (dependency: Dependency) =>
    'receive' in dependency ? (['receive', dependency.receive] as const) : 'fold' in dependency ? (['fold', dependency.fold] as const) : (['send', dependency.send] as const);
  /** Stripe `stripe` of `dependency`, for a dependent cut at `cuts`. */
  const striped = (dependency: Dependency, cuts: readonly number[], stripe: number): Dependency => {
    const [kind, index] = kindOf(dependency);
    const theirs = cutsOf[kind][index]!;
    if (theirs.at(-1) !== cuts.at(-1)) {
      throw new Error(`schedule ${schedule.algorithm}: ${kind} ${index} (${theirs.at(-1)} bytes) is a dependency of ${cuts.at(-1)} bytes`);
    }
    return { [kind]: first[kind][index]! + stripe } as Dependency;
  };
  /**
   * What stripe `stripe` of a send or fold of `producers` waits for: the stripes of theirs holding
   * its bytes (every one, for a stripe of no bytes), from the first one's byte where its own begin.
   */
  const stripedParts = (producers: Producers, cuts: readonly number[], stripe: number): Producers => {
    const sizeOf = (dependency: Dependency) => spanOfDependency(schedule, dependency).bytes;
    let skip: number | null = null;
    const parts = producedBytes(producers, sizeOf, cuts[stripe]!, cuts[stripe + 1]!).flatMap(({ dependency, start, end }) => {
      const [kind, index] = kindOf(dependency);
      const theirs = cutsOf[kind][index]!;
      const holding = theirs.slice(0, -1).flatMap((from, at) => (start === end || (from < end && theirs[at + 1]! > start) ? [at] : []));
      skip ??= start - theirs[holding[0]!]!;
      return holding.map((at) => ({ [kind]: first[kind][index]! + at }) as Dependency);
    });
    return { parts, skip: skip ?? 0 };
  };
  const railOf = (message: ScheduledMessage, stripe: number) => railOfPart(message.channel, stripe, rails, railOrder);
  const cut = (of: Span, cuts: readonly number[], stripe: number): Span => ({ memory: of.memory, offset: of.offset + cuts[stripe]!, bytes: cuts[stripe + 1]! - cuts[stripe]! });
  const stripesOf = <T>(cuts: readonly number[], make: (stripe: number) => T): T[] => Array.from({ length: cuts.length - 1 }, (_, stripe) => make(stripe));
  return {
    ...schedule,
    sends: schedule.sends.flatMap((send, index): ScheduledSend[] =>
      stripesOf(cutsOf.send[index]!, (stripe) => ({
        ...send,
        span: cut(send.span, cutsOf.send[index]!, stripe),
        rail: railOf(send, stripe),
        stripe,
        after: send.after === null ? null : 'parts' in send.after ? stripedParts(send.after, cutsOf.send[index]!, stripe) : striped(send.after, cutsOf.send[index]!, stripe),
      })),
    ),
    receives: schedule.receives.flatMap((receive, index): ScheduledMessage[] =>
      stripesOf(cutsOf.receive[index]!, (stripe) => ({ ...receive, span: cut(receive.span, cutsOf.receive[index]!, stripe), rail: railOf(receive, stripe), stripe })),
    ),
    folds: schedule.folds.flatMap((fold, index): ScheduledFold[] =>
      stripesOf(cutsOf.fold[index]!, (stripe) => ({
        ...fold,
        target: cut(fold.target, cutsOf.fold[index]!, stripe),
        sources: fold.sources.map((source) => cut(source, cutsOf.fold[index]!, stripe)),
        after: fold.after.map((dependency) => ('parts' in dependency ? stripedParts(dependency, cutsOf.fold[index]!, stripe) : striped(dependency, cutsOf.fold[index]!, stripe))),
      })),
    ),
  };
}
