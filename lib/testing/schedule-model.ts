/**
 * Every rank's schedule of one collective, run together in a model: a check that a schedule is
 * right before any byte moves. Values are symbols, not numbers: element i of rank r's tensor is
 * `r@i`, a fold of a and b is `(a+b)`, avg's division `(...)/W`, so a result says exactly which
 * contributions it holds and in which order they were folded.
 *
 * The model keeps the native plane's rules, the strictest of the two planes': messages between two
 * ranks travel in the order they are listed, whole; a send goes once what produces it is there, a
 * fold runs once its producers are done. Events happen in an order `random` picks among those
 * possible. It reports, instead of a result:
 * - a schedule that is malformed (a span outside its memory, messages of a link that do not pair
 *   up in size or label, a dependency that does not exist);
 * - a deadlock: ranks waiting on sends that are never made;
 * - a race: memory written while a send from it is still in flight, or while a fold that reads
 *   it has yet to run and does not wait for that write.
 */
import { withHeaderExchange } from '../collectives/schedule/header-exchange.js';
import type { MemoryName, Dependency, Schedule, ScheduleInput, Span } from '../collectives/schedule/schedule.js';

/** Where each rank's memories lie (aliases: in place, the input and output share one array). */
export interface ModelMemory {
  readonly inputElements: number;
  readonly outputElements: number;
  /** In-place forms, as `ScheduleInput.inPlace` means them for the collective. */
  readonly inPlace: 'none' | 'same' | 'input is output slot' | 'output is input slot';
}

export interface ScheduleModelResult {
  /** Each rank's output, element by element, as a symbol (`?` where nothing was written). */
  readonly outputs: string[][];
}

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
  readonly sentUpTo: Map<number, number>;
  readonly receivedUpTo: Map<number, number>;
  readonly sendsTo: Map<number, number[]>;
  readonly receivesFrom: Map<number, number[]>;
}

/** A message on its way: what it carries, and the span its sender reads it from until it lands. */
interface InFlight {
  readonly values: string[];
  readonly from: number;
  readonly send: number;
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
  const links = new Map<string, InFlight[]>();
  const inFlight = (from: number, to: number) => links.get(`${from}>${to}`) ?? links.set(`${from}>${to}`, []).get(`${from}>${to}`)!;

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
      for (const [peer, list] of state.sendsTo) {
        const at = state.sentUpTo.get(peer) ?? 0;
        const send = state.schedule.sends[list[at] ?? -1];
        if (send !== undefined && done(state, send.after)) {
          events.push(() => {
            inFlight(rank, peer).push({ values: read(state, send.span), from: rank, send: list[at]! });
            state.sentUpTo.set(peer, at + 1);
          });
        }
      }
      for (const [peer, list] of state.receivesFrom) {
        const at = state.receivedUpTo.get(peer) ?? 0;
        const queue = queues.get(`${peer}>${rank}`);
        if (at < list.length && queue !== undefined && queue.length > 0) {
          events.push(() => {
            const message = queue.shift()!;
            const index = list[at]!;
            write(all, rank, state.schedule.receives[index]!.span, message.values, { receive: index });
            state.received[index] = true;
            state.receivedUpTo.set(peer, at + 1);
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
    for (const [link, queue] of links) {
      if (!link.startsWith(`${rank}>`)) continue;
      for (const message of queue) {
        const sent = state.schedule.sends[message.send]!.span;
        if (overlaps(state, span, sent)) throw new ScheduleModelError(`race: rank ${rank} ${describeDependency(writer)} writes ${describeSpan(span)} while its send of ${describeSpan(sent)} to rank ${link.split('>')[1]} is in flight`);
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
  const sendsTo = new Map<number, number[]>();
  const receivesFrom = new Map<number, number[]>();
  schedule.sends.forEach((send, index) => (sendsTo.get(send.peer) ?? sendsTo.set(send.peer, []).get(send.peer)!).push(index));
  schedule.receives.forEach((receive, index) => (receivesFrom.get(receive.peer) ?? receivesFrom.set(receive.peer, []).get(receive.peer)!).push(index));
  return {
    schedule,
    arrays,
    received: schedule.receives.map(() => false),
    folded: schedule.folds.map(() => false),
    landed: schedule.sends.map(() => false),
    sentUpTo: new Map(),
    receivedUpTo: new Map(),
    sendsTo,
    receivesFrom,
  };
}

/** The k-th message rank a sends rank b is the k-th b receives from a: same size, same JS tag labels, no tag used twice. */
function checkLinks(ranks: readonly RankState[]): void {
  ranks.forEach((state, from) => {
    for (const [to, sends] of state.sendsTo) {
      const receives = ranks[to]?.receivesFrom.get(from) ?? [];
      if (receives.length !== sends.length) throw new ScheduleModelError(`rank ${from} sends rank ${to} ${sends.length} messages, rank ${to} receives ${receives.length}`);
      const labels = new Set<string>();
      sends.forEach((index, k) => {
        const send = state.schedule.sends[index]!;
        const receive = ranks[to]!.schedule.receives[receives[k]!]!;
        if (send.span.bytes !== receive.span.bytes) throw new ScheduleModelError(`rank ${from}'s message ${k} to rank ${to} has ${send.span.bytes} bytes, rank ${to} receives ${receive.span.bytes}`);
        if (send.step !== receive.step || send.channel !== receive.channel) throw new ScheduleModelError(`rank ${from}'s message ${k} to rank ${to} is step ${send.step} channel ${send.channel}, rank ${to} receives step ${receive.step} channel ${receive.channel}`);
        if (send.step > 0xfff || send.channel > 0x3f) throw new ScheduleModelError(`rank ${from}'s message ${k} to rank ${to}: step ${send.step} or channel ${send.channel} does not fit its tag`);
        // The native plane's stripes of one message share its step and channel, each on its own rail.
        const [sendRail, receiveRail] = [send.rail ?? 0, receive.rail ?? 0];
        if (sendRail !== receiveRail) throw new ScheduleModelError(`rank ${from}'s message ${k} to rank ${to} goes on rail ${sendRail}, rank ${to} receives it on rail ${receiveRail}`);
        const label = `${send.step}/${send.channel}/${sendRail}`;
        if (labels.has(label)) throw new ScheduleModelError(`rank ${from} sends rank ${to} two messages as step ${send.step} channel ${send.channel}${sendRail === 0 ? '' : ` rail ${sendRail}`}: their tags would collide`);
        labels.add(label);
      });
    }
    for (const [peer, receives] of state.receivesFrom) {
      if (!ranks[peer]?.sendsTo.has(from)) throw new ScheduleModelError(`rank ${from} receives ${receives.length} messages from rank ${peer}, which sends it none`);
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
  for (const [peer, list] of state.receivesFrom) {
    const at = state.receivedUpTo.get(peer) ?? 0;
    if (at < list.length) return `waits for message ${at} from rank ${peer}, which never comes`;
  }
  for (const [peer, list] of state.sendsTo) {
    const at = state.sentUpTo.get(peer) ?? 0;
    if (at < list.length) return `never sends message ${at} to rank ${peer}: it waits for ${describeDependency(state.schedule.sends[list[at]!]!.after!)}`;
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
