/**
 * Every rank's schedule of one collective, run together in a model: a check that a schedule is
 * right before any byte moves. Values are symbols, not numbers: element i of rank r's tensor is
 * `r@i`, a fold of a and b is `(a+b)`, avg's division `(...)/W`, so a result says exactly which
 * contributions it holds and in which order they were folded.
 *
 * The model keeps the native plane's rules, the strictest of the two planes': messages from one rank
 * to another on one rail travel in the order they are listed, whole (a data link per pair and
 * rail, so messages on different rails may overtake each other); a send goes once what produces
 * it is there (a send of several producers' bytes part by part: each part once its producer is
 * done, its receiver taking the message once every part has gone), a fold runs once its producers
 * are done. Events happen in an order `random` picks among those
 * possible. It reports, instead of a result:
 * - a schedule that is malformed (a span outside its memory, messages of a link that do not pair
 *   up in size or label, a dependency that does not exist);
 * - a deadlock: ranks waiting on sends that are never made;
 * - a race: memory written while a send from it is still in flight, or while a fold that reads
 *   it has yet to run and does not wait for that write.
 *
 * `runSplitScheduleModel` runs a world whose ranks disagree (each in a collective of its own idea)
 * and says which rank meets another collective's message first, as the plane names a mismatch, or
 * throws where ranks would wait in silence.
 *
 * `runConcurrentScheduleModel` runs several collectives at once on one job's ranks, each on a
 * communicator of its own (any members, overlapping): their messages travel on the communicator's
 * own data links (the native plane's, docs/architecture.md "Communicators") or, to show what that
 * buys, on the job's one link per pair of ranks and rail, in the order each rank issued its calls.
 */
import { withHeaderExchange } from '../collectives/schedule/header-exchange.js';
import { labelText, messageLabel } from '../collectives/schedule/message-label.js';
import { type Dependency, type MemoryName, producedBytes, type Producers, producersOf, type Schedule, type ScheduledSend, type ScheduleInput, type Span, spanOfDependency } from '../collectives/schedule/schedule.js';

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

/** One collective of `runConcurrentScheduleModel`: what `runScheduleModel` takes, on a communicator. */
export interface ModelCollective {
  /** The communicator it runs on, an index into `ConcurrentScheduleModel.communicators`. */
  readonly communicator: number;
  /** One schedule per rank of the communicator (its ranks and peers are the communicator's). */
  readonly schedules: readonly Schedule[];
  /** Each communicator rank's input, as `runScheduleModel`'s. */
  readonly input: (rank: number) => ScheduleInput;
  /** Its ranks' memories (every collective has memories of its own), as `runScheduleModel`'s. */
  readonly memory: ModelMemory;
}

/** Several collectives at once on one job's ranks, each on its communicator. */
export interface ConcurrentScheduleModel {
  /** Each communicator's members as job ranks: its rank i is job rank `communicators[c][i]` (any ranks, overlapping, the world too). */
  readonly communicators: readonly (readonly number[])[];
  /** Every collective, each with its own memories; those of one communicator in its call order. */
  readonly collectives: readonly ModelCollective[];
  /**
   * Per job rank (the job is as large as this list), the collectives it calls in the order it
   * issues them, without awaiting any: every collective of every communicator it is a member of,
   * once. The collectives of one communicator must come in the same order on all its members.
   */
  readonly issueOrder: readonly (readonly number[])[];
  /**
   * `own`: every communicator has data links of its own, one per pair of its members and rail
   * (rxccl's native plane), carrying its collectives' messages in its call order. `shared`: one
   * link per pair of job ranks and rail carries every communicator's messages, each end in its
   * rank's issue order, the whole of one collective's before the next one's (one in-order
   * stream per link, whose reader has nowhere to set an early message aside).
   */
  readonly links: 'own' | 'shared';
}

/** What `runConcurrentScheduleModel` computed: every collective's outputs, as `ScheduleModelResult.outputs` (indexed by communicator rank). */
export interface ConcurrentScheduleModelResult {
  readonly outputs: string[][][];
}

/** A schedule the model found wrong: a deadlock, a race on memory, a span outside its memory, sends and receives of a link that do not match. */
export class ScheduleModelError extends Error {
  override readonly name = 'ScheduleModelError';
}

interface RankState {
  readonly collective: number;
  /** How errors name the collective (empty where the model runs one). */
  readonly where: string;
  readonly schedule: Schedule;
  readonly arrays: Record<MemoryName, { readonly values: string[]; readonly base: number }>;
  readonly received: boolean[];
  readonly folded: boolean[];
  /** Sends whose message has landed (until then they read their memory). */
  readonly landed: boolean[];
  /** Each send's parts (`partsOf`), and how many of them it has read so far. */
  readonly parts: SendPart[][];
  readonly partsRead: number[];
  /** This rank's ends of its collective's links, by `Link`: what it sends on each, what it receives. */
  readonly sendsTo: Map<Link, LinkMessages>;
  readonly receivesFrom: Map<Link, LinkMessages>;
}

/** One rank's end of a collective's link: the peer and the rail, as `peer/rail`. */
type Link = `${number}/${number}`;

const linkOf = (peer: number, rail = 0): Link => `${peer}/${rail}`;

/** The messages one end of one collective's link sends (or receives), in order. */
interface LinkMessages {
  readonly collective: number;
  readonly peer: number;
  readonly rail: number;
  /** The schedule's sends (or receives) on it, in order. */
  readonly indices: number[];
  /** How many of them have gone (or come). */
  done: number;
  /** The data link its messages travel on (set once every rank's ends are known). */
  wire: Wire;
}

/**
 * A data link between two job ranks, one way: the collectives' links whose messages it carries,
 * in the order each end takes them (one collective's whole before the next's), and its messages
 * on the way.
 */
interface Wire {
  /** As a deadlock names it: `the job's link 0>2 rail 1`, `communicator 1's link 0>2`. */
  readonly name: string;
  readonly senders: LinkMessages[];
  readonly receivers: LinkMessages[];
  readonly queue: InFlight[];
}

/** A link as error texts name it: `rank 2`, or `rank 2 rail 1`. */
function describeLink({ peer, rail }: LinkMessages): string {
  return rail === 0 ? `rank ${peer}` : `rank ${peer} rail ${rail}`;
}

/**
 * A part of a send the model reads at once: send bytes [at, at + bytes), once `after` (if any) is
 * done. A send of one producer (or none) is one part; of several (`Producers`), one per producer
 * holding some of its bytes.
 */
interface SendPart {
  readonly after: Dependency | null;
  readonly at: number;
  readonly bytes: number;
}

/** A send's parts, as `SendPart` says. */
function partsOf(schedule: Schedule, send: ScheduledSend): SendPart[] {
  const whole = { at: 0, bytes: send.span.bytes };
  if (send.after === null || !('parts' in send.after)) return [{ ...whole, after: send.after }];
  const parts = producedBytes(send.after, (dependency) => spanOfDependency(schedule, dependency).bytes, 0, send.span.bytes);
  // A send of no bytes waits for every producer whole, as one of one producer does.
  return parts.map(({ dependency, start, end, at }) => ({ after: dependency, at: send.span.bytes === 0 ? 0 : at, bytes: send.span.bytes === 0 ? 0 : end - start }));
}

/**
 * A message on its way: what it carries (`?` where its sender has yet to read a part), and the
 * span its sender reads it from until it lands; whole once every part is read.
 */
interface InFlight {
  readonly values: string[];
  whole: boolean;
  readonly collective: number;
  readonly from: number;
  readonly send: number;
  /** The sender's end of its collective's link. */
  readonly to: LinkMessages;
  /** Which of that link's messages it is. */
  readonly index: number;
}

/**
 * Runs `schedules` (one per rank, for `inputs`' shapes) in the model; throws `ScheduleModelError`
 * naming what is wrong, else returns every rank's output.
 */
export function runScheduleModel(schedules: readonly Schedule[], input: (rank: number) => ScheduleInput, memory: ModelMemory, random: () => number): ScheduleModelResult {
  const ranks = schedules.map((_, rank) => rank);
  const { outputs } = runConcurrentScheduleModel({ communicators: [ranks], collectives: [{ communicator: 0, schedules, input, memory }], issueOrder: ranks.map(() => [0]), links: 'own' }, random);
  return { outputs: outputs[0]! };
}

/**
 * Runs `model`'s collectives together, every rank's schedule of each, their events interleaved in
 * an order `random` picks; throws `ScheduleModelError` naming what is wrong (the collective too),
 * else returns every collective's outputs. With `links: 'own'` collectives of different
 * communicators never wait on each other, in any issue orders; with `links: 'shared'` two
 * collectives that ranks issue in opposite orders deadlock where they share a link.
 */
export function runConcurrentScheduleModel(model: ConcurrentScheduleModel, random: () => number): ConcurrentScheduleModelResult {
  const { communicators, collectives } = model;
  checkIssueOrder(model);
  const states = collectives.map(({ communicator, schedules, input, memory }, collective) => {
    const members = communicators[communicator]!;
    const where = collectives.length === 1 ? '' : `collective ${collective} (communicator ${communicator}, job ranks ${members.join(',')}) `;
    if (schedules.length !== members.length) throw new ScheduleModelError(`${where}has ${schedules.length} schedules for ${members.length} ranks`);
    const width = input(0).width;
    const ranks = schedules.map((_, rank) => stateOf(withHeaderExchange((of) => schedules[of]!, members.length, rank), { collective, where, rank }, memory, width));
    checkLinks(ranks);
    return { ranks, width, where };
  });
  layWires(model, states.map(({ ranks }) => ranks));

  for (;;) {
    const events = possibleEvents(states);
    if (events.length === 0) break;
    events[Math.floor(random() * events.length)]!();
  }
  states.forEach(({ ranks, where }) =>
    ranks.forEach((state, rank) => {
      const stuck = describeStuck(state);
      if (stuck !== null) throw new ScheduleModelError(`deadlock: ${where}rank ${rank} ${stuck}`);
    }),
  );
  return {
    outputs: states.map(({ ranks }, collective) => {
      const { outputElements } = collectives[collective]!.memory;
      return ranks.map(({ arrays: { output } }) => output.values.slice(output.base, output.base + outputElements));
    }),
  };
}

/**
 * How each rank's schedule gets the native plane's headers: from the schedule any rank of its
 * collective runs, as it writes them (`withHeaderExchange`, the plane's; a test may try another).
 */
export type HeaderRule = (scheduleOf: (rank: number) => Schedule, worldSize: number, rank: number) => Schedule;

/**
 * A world whose ranks disagree on the collective they are in (different collectives or roots,
 * one rank a call behind): `collectives` as each group of ranks writes its collective, and which
 * one each rank is in.
 */
export interface SplitScheduleModel {
  readonly collectives: readonly Omit<ModelCollective, 'communicator'>[];
  /** For each rank of the world, an index into `collectives`. */
  readonly inCollective: readonly number[];
}

/**
 * Runs a split world in the model, each rank its own collective's schedule with `rule`'s headers,
 * on one data link per pair of ranks and rail; every message carries its collective (the native
 * plane's header), so a receive whose link brings another collective's message first has
 * detected the disagreement, as the plane names a header mismatch. Returns the first such
 * detection as text once nothing more can happen; throws `ScheduleModelError` where ranks wait
 * and none detects (a silent deadlock, which only a timeout would end).
 */
export function runSplitScheduleModel(split: SplitScheduleModel, random: () => number, rule: HeaderRule = withHeaderExchange): string {
  const { collectives, inCollective } = split;
  const worldSize = inCollective.length;
  const states = collectives.map(({ schedules, input, memory }, collective) => {
    if (schedules.length !== worldSize) throw new ScheduleModelError(`collective ${collective} has ${schedules.length} schedules for ${worldSize} ranks`);
    const width = input(0).width;
    // A sparse list: ranks in another collective are holes.
    const ranks: RankState[] = [];
    inCollective.forEach((of, rank) => {
      if (of === collective) ranks[rank] = stateOf(rule((peer) => schedules[peer]!, worldSize, rank), { collective, where: `collective ${collective} `, rank }, memory, width);
    });
    return { ranks, width };
  });
  const wires = new Map<string, Wire>();
  const wireOf = (from: number, to: number, rail: number) => {
    const name = `the link ${from}>${to}${rail === 0 ? '' : ` rail ${rail}`}`;
    return wires.get(name) ?? wires.set(name, { name, senders: [], receivers: [], queue: [] }).get(name)!;
  };
  for (const { ranks } of states) {
    ranks.forEach((state, rank) => {
      for (const link of state.sendsTo.values()) (link.wire = wireOf(rank, link.peer, link.rail)).senders.push(link);
      for (const link of state.receivesFrom.values()) (link.wire = wireOf(link.peer, rank, link.rail)).receivers.push(link);
    });
  }
  for (;;) {
    const events = possibleEvents(states);
    if (events.length === 0) break;
    events[Math.floor(random() * events.length)]!();
  }
  const waiting: string[] = [];
  for (const { ranks } of states) {
    for (const [rank, state] of ranks.entries()) {
      if (state === undefined) continue;
      for (const link of state.receivesFrom.values()) {
        const first = link.wire.queue[0];
        if (link.done < link.indices.length && first !== undefined && first.collective !== state.collective) {
          return `rank ${rank} (collective ${state.collective}) expects message ${link.done} from ${describeLink(link)}, which sent collective ${first.collective}'s`;
        }
      }
      const stuck = describeStuck(state);
      if (stuck !== null) waiting.push(`rank ${rank} (collective ${state.collective}) ${stuck}`);
    }
  }
  throw new ScheduleModelError(waiting.length === 0 ? 'every rank ended its own collective and none saw another\'s message' : `silent deadlock: ${waiting.join('; ')}`);
}

/** One collective's ranks in the model, with its element width. */
interface ModelStates {
  readonly ranks: readonly RankState[];
  readonly width: number;
}

/** Every event that may happen next, over every collective's ranks (a rank a collective lacks is a hole). */
function possibleEvents(states: readonly ModelStates[]): (() => void)[] {
  const events: (() => void)[] = [];
  for (const { ranks: all, width } of states) {
    all.forEach((state, rank) => {
      for (const link of state.sendsTo.values()) {
        const index = link.indices[link.done];
        const send = state.schedule.sends[index ?? -1];
        if (send === undefined || current(link.wire.senders) !== link) continue;
        const parts = state.parts[index!]!;
        const part = parts[state.partsRead[index!]!]!;
        if (!done(state, part.after)) continue;
        events.push(() => {
          // The first part puts the message on its link; each part reads its bytes as they are then.
          if (state.partsRead[index!] === 0) {
            const values = Array.from({ length: send.span.bytes / width }, () => '?');
            link.wire.queue.push({ values, whole: false, collective: state.collective, from: rank, send: index!, to: link, index: link.done });
          }
          const message = link.wire.queue.find((queued) => queued.collective === state.collective && queued.from === rank && queued.send === index)!;
          const bytes = read(state, { memory: send.span.memory, offset: send.span.offset + part.at, bytes: part.bytes }, width);
          message.values.splice(part.at / width, bytes.length, ...bytes);
          if (++state.partsRead[index!]! < parts.length) return;
          message.whole = true;
          link.done++;
        });
      }
      for (const link of state.receivesFrom.values()) {
        const message = link.wire.queue[0];
        if (link.done < link.indices.length && current(link.wire.receivers) === link && message?.whole === true && message.collective === state.collective && message.index === link.done) {
          events.push(() => {
            link.wire.queue.shift();
            const index = link.indices[link.done]!;
            write(all, rank, state.schedule.receives[index]!.span, message.values, { receive: index }, width);
            state.received[index] = true;
            link.done++;
            all[message.from]!.landed[message.send] = true;
          });
        }
      }
      state.schedule.folds.forEach((fold, index) => {
        if (state.folded[index] || !fold.after.every((dependency) => producersOf(dependency).parts.every((part) => done(state, part)))) return;
        events.push(() => {
          const sources = fold.sources.map((source) => read(state, source, width));
          const values = sources[0]!.map((_, element) => {
            const folded = sources.map((source) => source[element]!).reduce((left, right) => `(${left}+${right})`);
            return fold.op === 'avg' && fold.divisor !== 1 ? `${folded}/${fold.divisor}` : folded;
          });
          write(all, rank, fold.target, values, { fold: index }, width);
          state.folded[index] = true;
        });
      });
    });
  }
  return events;
}

/** Writes `values` at `span` of `rank`, after checking nothing still reads what they replace. */
function write(all: readonly RankState[], rank: number, span: Span, values: string[], writer: Dependency, width: number): void {
  const state = all[rank]!;
  for (const wire of wiresOf(state)) {
    for (const message of wire.queue) {
      if (message.collective !== state.collective || message.from !== rank) continue;
      const sent = state.schedule.sends[message.send]!.span;
      // What the native plane may have sent of it: the parts read, and those whose producer is done.
      const taken = state.parts[message.send]!.filter((part, at) => at < state.partsRead[message.send]! || done(state, part.after));
      const hit = taken.some((part) => overlaps(state, span, { memory: sent.memory, offset: sent.offset + part.at, bytes: part.bytes }, width));
      if (hit) throw new ScheduleModelError(`race: ${state.where}rank ${rank} ${describeDependency(writer)} writes ${describeSpan(span)} while its send of ${describeSpan(sent)} to ${describeLink(message.to)} is in flight`);
    }
  }
  state.schedule.folds.forEach((fold, index) => {
    if (state.folded[index] || same({ fold: index }, writer) || fold.after.some((dependency) => producersOf(dependency).parts.some((part) => same(part, writer)))) return;
    for (const source of fold.sources) {
      if (overlaps(state, span, source, width)) {
        throw new ScheduleModelError(`race: ${state.where}rank ${rank} ${describeDependency(writer)} writes ${describeSpan(span)} before fold ${index}, which reads it and does not wait for it, has run`);
      }
    }
  });
  const { values: array, base } = state.arrays[span.memory];
  values.forEach((value, element) => (array[base + span.offset / width + element] = value));
}

/** The first of a wire's ends (in the order it takes them) that has messages left: the one it serves now. */
function current(ends: readonly LinkMessages[]): LinkMessages | undefined {
  return ends.find((end) => end.done < end.indices.length);
}

/** The wires `state`'s sends travel on. */
function wiresOf(state: RankState): Wire[] {
  return [...state.sendsTo.values()].map((link) => link.wire);
}

function read(state: RankState, span: Span, width: number): string[] {
  const { values, base } = state.arrays[span.memory];
  const first = base + span.offset / width;
  return values.slice(first, first + span.bytes / width);
}

function overlaps(state: RankState, a: Span, b: Span, width: number): boolean {
  const range = (of: Span) => {
    const { values, base } = state.arrays[of.memory];
    return { values, start: base + of.offset / width, end: base + (of.offset + of.bytes) / width };
  };
  const x = range(a);
  const y = range(b);
  return x.values === y.values && x.start < y.end && y.start < x.end && a.bytes > 0 && b.bytes > 0;
}

/** Every job rank issues every collective of its communicators once, and nothing else. */
function checkIssueOrder({ communicators, collectives, issueOrder }: ConcurrentScheduleModel): void {
  communicators.forEach((members, communicator) => {
    if (members.length === 0 || new Set(members).size !== members.length || members.some((rank) => !Number.isInteger(rank) || rank < 0 || rank >= issueOrder.length)) {
      throw new ScheduleModelError(`communicator ${communicator} [${members.join(',')}] is not distinct job ranks of 0..${issueOrder.length - 1}`);
    }
  });
  collectives.forEach(({ communicator }, collective) => {
    if (communicators[communicator] === undefined) throw new ScheduleModelError(`collective ${collective} runs on communicator ${communicator}, of ${communicators.length}`);
  });
  issueOrder.forEach((issued, jobRank) => {
    const owed = collectives.flatMap(({ communicator }, collective) => (communicators[communicator]!.includes(jobRank) ? [collective] : []));
    const sorted = [...issued].sort((a, b) => a - b);
    if (sorted.length !== owed.length || sorted.some((collective, at) => collective !== owed[at])) {
      throw new ScheduleModelError(`job rank ${jobRank} issues collectives ${issued.join(',')}, its communicators have ${owed.join(',')}`);
    }
  });
}

/**
 * Puts every collective's link ends on the data links they travel on: the communicator's own
 * (`own`) or the job's (`shared`), each end's in its job rank's issue order.
 */
function layWires({ communicators, collectives, issueOrder, links }: ConcurrentScheduleModel, states: readonly (readonly RankState[])[]): void {
  const wires = new Map<string, Wire>();
  const wireOf = (collective: number, from: number, to: number, rail: number) => {
    const communicator = collectives[collective]!.communicator;
    const members = communicators[communicator]!;
    const [a, b] = [members[from]!, members[to]!];
    const onRail = rail === 0 ? '' : ` rail ${rail}`;
    const name = links === 'own' ? `communicator ${communicator}'s link ${a}>${b}${onRail}` : `the job's link ${a}>${b}${onRail}`;
    return wires.get(name) ?? wires.set(name, { name, senders: [], receivers: [], queue: [] }).get(name)!;
  };
  issueOrder.forEach((issued, jobRank) => {
    for (const collective of issued) {
      const rank = communicators[collectives[collective]!.communicator]!.indexOf(jobRank);
      const state = states[collective]![rank]!;
      for (const link of state.sendsTo.values()) (link.wire = wireOf(collective, rank, link.peer, link.rail)).senders.push(link);
      for (const link of state.receivesFrom.values()) (link.wire = wireOf(collective, link.peer, rank, link.rail)).receivers.push(link);
    }
  });
}

/** Where a rank's state belongs: its collective (and how errors name it), and its rank there. */
interface RankPlace {
  readonly collective: number;
  readonly where: string;
  readonly rank: number;
}

function stateOf(schedule: Schedule, { collective, where, rank }: RankPlace, memory: ModelMemory, width: number): RankState {
  const elements = (bytes: number, what: string) => {
    if (bytes % width !== 0) throw new ScheduleModelError(`${where}rank ${rank} ${what} of ${bytes} bytes is not whole elements of ${width} bytes`);
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
    if (first < 0 || first + count > limits[span.memory]) throw new ScheduleModelError(`${where}rank ${rank} ${what} ${describeSpan(span)} lies outside its ${span.memory} of ${limits[span.memory] * width} bytes`);
  };
  const dependencyExists = (dependency: Dependency | null, what: string): void => {
    if (dependency === null) return;
    const exists =
      'receive' in dependency ? dependency.receive < schedule.receives.length : 'fold' in dependency ? dependency.fold < schedule.folds.length : dependency.send < schedule.sends.length;
    if (!exists) throw new ScheduleModelError(`${where}rank ${rank} ${what} waits for ${describeDependency(dependency)}, which does not exist`);
  };
  const spanOf = (dependency: Dependency) => spanOfDependency(schedule, dependency);
  /** What a send or fold of `bytes` waits for: producers that exist, one of its size or `Producers` holding its bytes. */
  const checkAfter = (after: Dependency | Producers | null, bytes: number, what: string) => {
    if (after === null) return;
    if (!('parts' in after)) {
      dependencyExists(after, what);
      // The JS plane cuts a span and what produces it into the same pieces: they must be alike.
      if (spanOf(after).bytes !== bytes) throw new ScheduleModelError(`${where}rank ${rank} ${what} of ${bytes} bytes waits for ${describeDependency(after)} of ${spanOf(after).bytes}`);
      return;
    }
    after.parts.forEach((part) => dependencyExists(part, what));
    const produced = after.parts.reduce((sum, part) => sum + spanOf(part).bytes, 0);
    if (after.parts.length === 0 || produced < after.skip + bytes) {
      throw new ScheduleModelError(`${where}rank ${rank} ${what} of ${bytes} bytes waits for ${after.parts.map(describeDependency).join(', ') || 'no part'} from byte ${after.skip}, of ${produced} bytes in all`);
    }
    // As the native decoder (native/schedule_program.cc): the first part holds the first byte waited for.
    if (bytes > 0 && after.skip >= spanOf(after.parts[0]!).bytes) {
      throw new ScheduleModelError(`${where}rank ${rank} ${what} waits for ${describeDependency(after.parts[0]!)} wholly before its bytes (from byte ${after.skip})`);
    }
  };
  schedule.sends.forEach((send, index) => {
    inBounds(send.span, `send ${index}`);
    checkAfter(send.after, send.span.bytes, `send ${index}`);
  });
  schedule.receives.forEach((receive, index) => inBounds(receive.span, `receive ${index}`));
  schedule.folds.forEach((fold, index) => {
    inBounds(fold.target, `fold ${index} target`);
    if (fold.sources.length === 0) throw new ScheduleModelError(`${where}rank ${rank} fold ${index} has no source`);
    fold.sources.forEach((source, at) => {
      inBounds(source, `fold ${index} source ${at}`);
      if (source.bytes !== fold.target.bytes) throw new ScheduleModelError(`${where}rank ${rank} fold ${index} source ${at} has ${source.bytes} bytes, its target ${fold.target.bytes}`);
    });
    for (const dependency of fold.after) checkAfter(dependency, fold.target.bytes, `fold ${index}`);
  });
  const sendsTo = new Map<Link, LinkMessages>();
  const receivesFrom = new Map<Link, LinkMessages>();
  // Each end's wire is laid once every rank's ends are known (layWires).
  const unlaid: Wire = { name: 'no link', senders: [], receivers: [], queue: [] };
  const listOn = (ends: Map<Link, LinkMessages>, peer: number, rail: number) => {
    const link = linkOf(peer, rail);
    return ends.get(link) ?? ends.set(link, { collective, peer, rail, indices: [], done: 0, wire: unlaid }).get(link)!;
  };
  schedule.sends.forEach(({ peer, rail = 0 }, index) => listOn(sendsTo, peer, rail).indices.push(index));
  schedule.receives.forEach(({ peer, rail = 0 }, index) => listOn(receivesFrom, peer, rail).indices.push(index));
  return {
    collective,
    where,
    schedule,
    arrays,
    received: schedule.receives.map(() => false),
    folded: schedule.folds.map(() => false),
    landed: schedule.sends.map(() => false),
    parts: schedule.sends.map((send) => partsOf(schedule, send)),
    partsRead: schedule.sends.map(() => 0),
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
    const { where } = state;
    const labels = new Map<number, Set<string>>();
    for (const { peer: to, rail, indices: sends } of state.sendsTo.values()) {
      const receives = ranks[to]?.receivesFrom.get(linkOf(from, rail))?.indices ?? [];
      const onRail = rail === 0 ? '' : ` on rail ${rail}`;
      if (receives.length !== sends.length) throw new ScheduleModelError(`${where}rank ${from} sends rank ${to} ${sends.length} messages${onRail}, rank ${to} receives ${receives.length}`);
      const used = labels.get(to) ?? labels.set(to, new Set()).get(to)!;
      sends.forEach((index, k) => {
        const send = state.schedule.sends[index]!;
        const receive = ranks[to]!.schedule.receives[receives[k]!]!;
        const message = `${where}rank ${from}'s message ${k} to rank ${to}${onRail}`;
        if (send.span.bytes !== receive.span.bytes) throw new ScheduleModelError(`${message} has ${send.span.bytes} bytes, rank ${to} receives ${receive.span.bytes}`);
        if (messageLabel(send) !== messageLabel(receive)) throw new ScheduleModelError(`${message} is ${labelText(messageLabel(send))}, rank ${to} receives ${labelText(messageLabel(receive))}`);
        if (send.step > 0xfff || send.channel > 0x3fff) throw new ScheduleModelError(`${message}: step ${send.step} or channel ${send.channel} does not fit its label`);
        // The tags carry the channel mod 64.
        const label = `${send.step}/${send.channel % 64}/${rail}`;
        if (used.has(label)) throw new ScheduleModelError(`${where}rank ${from} sends rank ${to} two messages as step ${send.step} channel ${send.channel}${onRail}: their tags would collide`);
        used.add(label);
      });
    }
    for (const link of state.receivesFrom.values()) {
      if (!ranks[link.peer]?.sendsTo.has(linkOf(from, link.rail))) throw new ScheduleModelError(`${where}rank ${from} receives ${link.indices.length} messages from ${describeLink(link)}, which sends it none there`);
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
    if (link.done < link.indices.length) return `waits for message ${link.done} from ${describeLink(link)}, ${describeBlocking(link, link.wire.receivers, link.wire.queue[0]?.collective)}`;
  }
  for (const link of state.sendsTo.values()) {
    if (link.done >= link.indices.length) continue;
    const first = current(link.wire.senders);
    if (first !== link) return `never sends message ${link.done} to ${describeLink(link)}: collective ${first!.collective}'s messages go first on ${link.wire.name}`;
    const index = link.indices[link.done]!;
    return `never sends message ${link.done} to ${describeLink(link)}: it waits for ${describeDependency(state.parts[index]![state.partsRead[index]!]!.after!)}`;
  }
  const fold = state.folded.indexOf(false);
  return fold < 0 ? null : `never runs fold ${fold}`;
}

/** Why a receive on `link` cannot take the next message: another collective's end or message is first on its data link, or none comes. */
function describeBlocking(link: LinkMessages, receivers: readonly LinkMessages[], first: number | undefined): string {
  const serving = current(receivers)!;
  if (serving !== link) return `behind collective ${serving.collective}'s messages on ${link.wire.name}`;
  if (first !== undefined && first !== link.collective) return `behind collective ${first}'s message on ${link.wire.name}`;
  return 'which never comes';
}

function describeDependency(dependency: Dependency): string {
  if ('receive' in dependency) return `receive ${dependency.receive}`;
  return 'fold' in dependency ? `fold ${dependency.fold}` : `send ${dependency.send}`;
}

function describeSpan(span: Span): string {
  return `${span.memory}[${span.offset}, ${span.offset + span.bytes})`;
}
