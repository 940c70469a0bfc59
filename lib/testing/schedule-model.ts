/**
 * Every rank's schedule of one collective, run together in a model: a check that a schedule is
 * right before any byte moves. Values are symbols, not numbers: element i of rank r's tensor is
 * `r@i`, a fold of a and b is `(a+b)`, avg's division `(...)/W`, so a result says exactly which
 * contributions it holds and in which order they were folded.
 *
 * The model keeps the native plane's rules, the strictest of the two planes': messages from one rank
 * to another on one rail travel in the order they are listed, whole (a data link per pair and
 * rail, so messages on different rails may overtake each other); a send goes once what produces
 * it is there, a fold runs once its producers are done. Events happen in an order `random` picks among those
 * possible. It reports, instead of a result:
 * - a schedule that is malformed (a span outside its memory, messages of a link that do not pair
 *   up in size or label, a dependency that does not exist);
 * - a deadlock: ranks waiting on sends that are never made;
 * - a race: memory written while a send from it is still in flight, or while a fold that reads
 *   it has yet to run and does not wait for that write.
 */
import { withHeaderExchange } from '../collectives/schedule/header-exchange.js';
import { labelText, messageLabel } from '../collectives/schedule/message-label.js';
import type { MemoryName, Dependency, Schedule, ScheduleInput, Span } from '../collectives/schedule/schedule.js';

/** Where each rank's memories lie (aliases: in place, the input and output share one array). */
export interface ModelMemory {
  readonly inputElements: number;
  readonly outputElements: number;
  /** In-place forms, as `ScheduleInput.inPlace` means them for the collective. */
  readonly inPlace: 'none' | 'same' | 'input is output slot' | 'output is input slot';
}

/** What `runScheduleModel` computed: each rank's output in symbols. */
export interface ScheduleModelResult {
  /** Each rank's output, element by element, as a symbol (`?` where nothing was written). */
  readonly outputs: string[][];
}

/** A schedule the model found wrong: a deadlock, a race on memory, a span outside its memory, sends and receives of a link that do not match. */
export class ScheduleModelError extends Error {
  override readonly name = 'ScheduleModelError';
}

interface RankState {
  readonly schedule: Schedule;
  readonly arrays: Record<MemoryName, { readonly values: string[]; readonly base: number }>;
  readonly received: boolean[];
  readonly folded: boolean[];
  /** Sends whose message has landed (until then they read their memory). */
  readonly landed: boolean[];
  /** This rank's ends of its data links, by `Link`: what it sends on each, what it receives. */
  readonly sendsTo: Map<Link, LinkMessages>;
  readonly receivesFrom: Map<Link, LinkMessages>;
}

/** One rank's end of a data link: the peer and the rail, as `peer/rail`. */
type Link = `${number}/${number}`;

const linkOf = (peer: number, rail = 0): Link => `${peer}/${rail}`;

/** The messages one end of a data link sends (or receives), in order. */
interface LinkMessages {
  readonly peer: number;
  readonly rail: number;
  /** The schedule's sends (or receives) on it, in order. */
  readonly indices: number[];
  /** How many of them have gone (or come). */
  done: number;
  /** The link's messages in flight, as the model files them: `from>to/rail`. */
  readonly wire: string;
}

/** A link as error texts name it: `rank 2`, or `rank 2 rail 1`. */
function describeLink({ peer, rail }: LinkMessages): string {
  return rail === 0 ? `rank ${peer}` : `rank ${peer} rail ${rail}`;
}

/** A message on its way: what it carries, and the span its sender reads it from until it lands. */
interface InFlight {
  readonly values: string[];
  readonly from: number;
  readonly send: number;
  /** The sender's end of the link it is on. */
  readonly to: LinkMessages;
}

/**
 * Runs `schedules` (one per rank, for `inputs`' shapes) in the model; throws `ScheduleModelError`
 * naming what is wrong, else returns every rank's output.
 */
export function runScheduleModel(schedules: readonly Schedule[], input: (rank: number) => ScheduleInput, memory: ModelMemory, random: () => number): ScheduleModelResult {
  const worldSize = schedules.length;
  const width = input(0).width;
  const ranks = schedules.map((plain, rank) => stateOf(withHeaderExchange(plain, worldSize, rank), rank, memory, width));
  checkLinks(ranks);
  // Messages on their way, per data link (`LinkMessages.wire`).
  const links = new Map<string, InFlight[]>();
  const inFlight = (wire: string) => links.get(wire) ?? links.set(wire, []).get(wire)!;

  for (;;) {
    const events = possibleEvents(ranks, links);
    if (events.length === 0) break;
    events[Math.floor(random() * events.length)]!();
  }
  ranks.forEach((state, rank) => {
    const stuck = describeStuck(state);
    if (stuck !== null) throw new ScheduleModelError(`deadlock: rank ${rank} ${stuck}`);
  });
  return { outputs: ranks.map((state) => state.arrays.output.values.slice(state.arrays.output.base, state.arrays.output.base + memory.outputElements)) };

  function possibleEvents(all: RankState[], queues: Map<string, InFlight[]>): (() => void)[] {
    const events: (() => void)[] = [];
    all.forEach((state, rank) => {
      for (const link of state.sendsTo.values()) {
        const index = link.indices[link.done];
        const send = state.schedule.sends[index ?? -1];
        if (send !== undefined && done(state, send.after)) {
          events.push(() => {
            inFlight(link.wire).push({ values: read(state, send.span), from: rank, send: index!, to: link });
            link.done++;
          });
        }
      }
      for (const link of state.receivesFrom.values()) {
        const queue = queues.get(link.wire);
        if (link.done < link.indices.length && queue !== undefined && queue.length > 0) {
          events.push(() => {
            const message = queue.shift()!;
            const index = link.indices[link.done]!;
            write(all, rank, state.schedule.receives[index]!.span, message.values, { receive: index });
            state.received[index] = true;
            link.done++;
            all[message.from]!.landed[message.send] = true;
          });
        }
      }
      state.schedule.folds.forEach((fold, index) => {
        if (state.folded[index] || !fold.after.every((dependency) => done(state, dependency))) return;
        events.push(() => {
          const sources = fold.sources.map((source) => read(state, source));
          const values = sources[0]!.map((_, element) => {
            const folded = sources.map((source) => source[element]!).reduce((left, right) => `(${left}+${right})`);
            return fold.op === 'avg' && fold.divisor !== 1 ? `${folded}/${fold.divisor}` : folded;
          });
          write(all, rank, fold.target, values, { fold: index });
          state.folded[index] = true;
        });
      });
    });
    return events;
  }

  /** Writes `values` at `span` of `rank`, after checking nothing still reads what they replace. */
  function write(all: RankState[], rank: number, span: Span, values: string[], writer: Dependency): void {
    const state = all[rank]!;
    for (const queue of links.values()) {
      for (const message of queue) {
        if (message.from !== rank) continue;
        const sent = state.schedule.sends[message.send]!.span;
        if (overlaps(state, span, sent)) throw new ScheduleModelError(`race: rank ${rank} ${describeDependency(writer)} writes ${describeSpan(span)} while its send of ${describeSpan(sent)} to ${describeLink(message.to)} is in flight`);
      }
    }
    state.schedule.folds.forEach((fold, index) => {
      if (state.folded[index] || same({ fold: index }, writer) || fold.after.some((dependency) => same(dependency, writer))) return;
      for (const source of fold.sources) {
        if (overlaps(state, span, source)) {
          throw new ScheduleModelError(`race: rank ${rank} ${describeDependency(writer)} writes ${describeSpan(span)} before fold ${index}, which reads it and does not wait for it, has run`);
        }
      }
    });
    const { values: array, base } = state.arrays[span.memory];
    values.forEach((value, element) => (array[base + span.offset / width + element] = value));
  }

  function read(state: RankState, span: Span): string[] {
    const { values, base } = state.arrays[span.memory];
    const first = base + span.offset / width;
    return values.slice(first, first + span.bytes / width);
  }

  function overlaps(state: RankState, a: Span, b: Span): boolean {
    const range = (of: Span) => {
      const { values, base } = state.arrays[of.memory];
      return { values, start: base + of.offset / width, end: base + (of.offset + of.bytes) / width };
    };
    const x = range(a);
    const y = range(b);
    return x.values === y.values && x.start < y.end && y.start < x.end && a.bytes > 0 && b.bytes > 0;
  }

}

function stateOf(schedule: Schedule, rank: number, memory: ModelMemory, width: number): RankState {
  const elements = (bytes: number, what: string) => {
    if (bytes % width !== 0) throw new ScheduleModelError(`rank ${rank} ${what} of ${bytes} bytes is not whole elements of ${width} bytes`);
    return bytes / width;
  };
  const scratch = Array.from({ length: elements(schedule.scratchBytes, 'scratch') }, () => '?');
  const input = Array.from({ length: memory.inputElements }, (_, element) => `${rank}@${element}`);
  let arrays: RankState['arrays'];
  switch (memory.inPlace) {
    case 'same':
      arrays = { input: { values: input, base: 0 }, output: { values: input, base: 0 }, scratch: { values: scratch, base: 0 } };
      break;
    case 'input is output slot': {
      const output = Array.from({ length: memory.outputElements }, () => '?');
      output.splice(rank * memory.inputElements, memory.inputElements, ...input);
      arrays = { input: { values: output, base: rank * memory.inputElements }, output: { values: output, base: 0 }, scratch: { values: scratch, base: 0 } };
      break;
    }
    case 'output is input slot':
      arrays = { input: { values: input, base: 0 }, output: { values: input, base: rank * memory.outputElements }, scratch: { values: scratch, base: 0 } };
      break;
    default:
      arrays = { input: { values: input, base: 0 }, output: { values: Array.from({ length: memory.outputElements }, () => '?'), base: 0 }, scratch: { values: scratch, base: 0 } };
  }
  const limits: Record<MemoryName, number> = { input: memory.inputElements, output: memory.outputElements, scratch: scratch.length };
  const inBounds = (span: Span, what: string) => {
    const first = elements(span.offset, `${what} offset`);
    const count = elements(span.bytes, what);
    if (first < 0 || first + count > limits[span.memory]) throw new ScheduleModelError(`rank ${rank} ${what} ${describeSpan(span)} lies outside its ${span.memory} of ${limits[span.memory] * width} bytes`);
  };
  const dependencyExists = (dependency: Dependency | null, what: string) => {
    if (dependency === null) return;
    const exists =
      'receive' in dependency ? dependency.receive < schedule.receives.length : 'fold' in dependency ? dependency.fold < schedule.folds.length : dependency.send < schedule.sends.length;
    if (!exists) throw new ScheduleModelError(`rank ${rank} ${what} waits for ${describeDependency(dependency)}, which does not exist`);
  };
  const spanOf = (dependency: Dependency) =>
    'receive' in dependency ? schedule.receives[dependency.receive]!.span : 'fold' in dependency ? schedule.folds[dependency.fold]!.target : schedule.sends[dependency.send]!.span;
  schedule.sends.forEach((send, index) => {
    inBounds(send.span, `send ${index}`);
    dependencyExists(send.after, `send ${index}`);
    // The JS plane cuts a span and what produces it into the same pieces: they must be alike.
    if (send.after !== null && spanOf(send.after).bytes !== send.span.bytes) throw new ScheduleModelError(`rank ${rank} send ${index} of ${send.span.bytes} bytes waits for ${describeDependency(send.after)} of ${spanOf(send.after).bytes}`);
  });
  schedule.receives.forEach((receive, index) => inBounds(receive.span, `receive ${index}`));
  schedule.folds.forEach((fold, index) => {
    inBounds(fold.target, `fold ${index} target`);
    if (fold.sources.length === 0) throw new ScheduleModelError(`rank ${rank} fold ${index} has no source`);
    fold.sources.forEach((source, at) => {
      inBounds(source, `fold ${index} source ${at}`);
      if (source.bytes !== fold.target.bytes) throw new ScheduleModelError(`rank ${rank} fold ${index} source ${at} has ${source.bytes} bytes, its target ${fold.target.bytes}`);
    });
    for (const dependency of fold.after) {
      dependencyExists(dependency, `fold ${index}`);
      if (spanOf(dependency).bytes !== fold.target.bytes) throw new ScheduleModelError(`rank ${rank} fold ${index} waits for ${describeDependency(dependency)} of another size`);
    }
  });
  const sendsTo = new Map<Link, LinkMessages>();
  const receivesFrom = new Map<Link, LinkMessages>();
  const listOn = (ends: Map<Link, LinkMessages>, peer: number, rail: number, wire: string) => {
    const link = linkOf(peer, rail);
    return ends.get(link) ?? ends.set(link, { peer, rail, indices: [], done: 0, wire }).get(link)!;
  };
  schedule.sends.forEach(({ peer, rail = 0 }, index) => listOn(sendsTo, peer, rail, `${rank}>${peer}/${rail}`).indices.push(index));
  schedule.receives.forEach(({ peer, rail = 0 }, index) => listOn(receivesFrom, peer, rail, `${peer}>${rank}/${rail}`).indices.push(index));
  return {
    schedule,
    arrays,
    received: schedule.receives.map(() => false),
    folded: schedule.folds.map(() => false),
    landed: schedule.sends.map(() => false),
    sendsTo,
    receivesFrom,
  };
}

/**
 * The k-th message rank a sends rank b on a rail is the k-th b receives from a on that rail: same
 * size, same label (step, channel and stripe: the JS plane's tags, the native plane's headers); no tag used twice between a and b (the JS plane's stripes of one
 * message share its step and channel, each on its own rail).
 */
function checkLinks(ranks: readonly RankState[]): void {
  ranks.forEach((state, from) => {
    const labels = new Map<number, Set<string>>();
    for (const { peer: to, rail, indices: sends } of state.sendsTo.values()) {
      const receives = ranks[to]?.receivesFrom.get(linkOf(from, rail))?.indices ?? [];
      const onRail = rail === 0 ? '' : ` on rail ${rail}`;
      if (receives.length !== sends.length) throw new ScheduleModelError(`rank ${from} sends rank ${to} ${sends.length} messages${onRail}, rank ${to} receives ${receives.length}`);
      const used = labels.get(to) ?? labels.set(to, new Set()).get(to)!;
      sends.forEach((index, k) => {
        const send = state.schedule.sends[index]!;
        const receive = ranks[to]!.schedule.receives[receives[k]!]!;
        const message = `rank ${from}'s message ${k} to rank ${to}${onRail}`;
        if (send.span.bytes !== receive.span.bytes) throw new ScheduleModelError(`${message} has ${send.span.bytes} bytes, rank ${to} receives ${receive.span.bytes}`);
        if (messageLabel(send) !== messageLabel(receive)) throw new ScheduleModelError(`${message} is ${labelText(messageLabel(send))}, rank ${to} receives ${labelText(messageLabel(receive))}`);
        if (send.step > 0xfff || send.channel > 0x3fff) throw new ScheduleModelError(`${message}: step ${send.step} or channel ${send.channel} does not fit its label`);
        // The tags carry the channel mod 64.
        const label = `${send.step}/${send.channel % 64}/${rail}`;
        if (used.has(label)) throw new ScheduleModelError(`rank ${from} sends rank ${to} two messages as step ${send.step} channel ${send.channel}${onRail}: their tags would collide`);
        used.add(label);
      });
    }
    for (const link of state.receivesFrom.values()) {
      if (!ranks[link.peer]?.sendsTo.has(linkOf(from, link.rail))) throw new ScheduleModelError(`rank ${from} receives ${link.indices.length} messages from ${describeLink(link)}, which sends it none there`);
    }
  });
}

function done(state: RankState, dependency: Dependency | null): boolean {
  if (dependency === null) return true;
  if ('receive' in dependency) return state.received[dependency.receive]!;
  return 'fold' in dependency ? state.folded[dependency.fold]! : state.landed[dependency.send]!;
}

function same(a: Dependency, b: Dependency): boolean {
  if ('receive' in a) return 'receive' in b && a.receive === b.receive;
  if ('fold' in a) return 'fold' in b && a.fold === b.fold;
  return 'send' in b && a.send === b.send;
}

function describeStuck(state: RankState): string | null {
  for (const link of state.receivesFrom.values()) {
    if (link.done < link.indices.length) return `waits for message ${link.done} from ${describeLink(link)}, which never comes`;
  }
  for (const link of state.sendsTo.values()) {
    if (link.done < link.indices.length) return `never sends message ${link.done} to ${describeLink(link)}: it waits for ${describeDependency(state.schedule.sends[link.indices[link.done]!]!.after!)}`;
  }
  const fold = state.folded.indexOf(false);
  return fold < 0 ? null : `never runs fold ${fold}`;
}

function describeDependency(dependency: Dependency): string {
  if ('receive' in dependency) return `receive ${dependency.receive}`;
  return 'fold' in dependency ? `fold ${dependency.fold}` : `send ${dependency.send}`;
}

function describeSpan(span: Span): string {
  return `${span.memory}[${span.offset}, ${span.offset + span.bytes})`;
}
