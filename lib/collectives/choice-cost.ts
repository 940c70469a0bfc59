import type { CollectiveTopology } from '../topology/collective-topology.js';
import { stripedBandwidth } from './cost-model.js';
import { COST_SETTINGS, type LinkClass, type LinkCost } from './cost-settings.js';
import { withHeaderExchange } from './schedule/header-exchange.js';
import { withHeadersAlone } from './schedule/link-agreement.js';
import type { Dependency, Producers, Schedule, ScheduleInput, ScheduleOf } from './schedule/schedule.js';

/**
 * The choice's cost model (docs/protocol.md 9.10): what a candidate's schedule costs, from the
 * schedule itself as every rank would write it. Four terms, each the worst over the job:
 *
 * - latency: the critical path, each message on it adding its link's latency (a message waits for
 *   what its send waits for: receives, folds, sends that must have left);
 * - messages: the busiest rank's sends and receives, times the plane's CPU per message;
 * - transfer: the busiest directed link's bytes over its bandwidth, the busiest rank's bytes out
 *   over its fastest link's (a rank's sends share its CPU and socket buffers), or the busiest
 *   host's bytes to other hosts over its fastest such link's (a host's links out share one NIC);
 * - folds: the busiest rank's bytes read by folds (each source once) over the plane's fold rate.
 *
 * The first two do not depend on the tensor's size; the last two grow with it. So one reckoning
 * per shape, at a reference size where every share of every schedule holds bytes, serves every
 * size: estimate(bytes) = ceil(latencyNs + messagesNs + nsPerByte x bytes).
 *
 * One exception by size: on the native plane a payload of 256 KiB or more between ranks of one
 * host is copied by its receiver out of the sender's memory (single copy), so its bytes load the
 * receiver, not the sender. From the size where every such payload of the shape is that large,
 * the transfer term counts them as the busiest rank's bytes read instead of sent
 * (`readByReceiver`): a broadcast's root then sends nothing itself, and every rank reading the
 * root once costs what one link of the chain does, without the chain's steps.
 */
export interface ShapeCost {
  readonly latencyNs: number;
  readonly messagesNs: number;
  /** (transfer + folds) at the reference size, divided by its bytes. */
  readonly nsPerByte: number;
  /** From `fromBytes` (a call's size) every same-host payload is read by its receiver, and the ns per byte are these; null where none is. */
  readonly readByReceiver: { readonly fromBytes: number; readonly nsPerByte: number } | null;
}

/** The estimate, ns, of a call of `bytes` of a shape that costs `cost`. */
export function estimateOf(cost: ShapeCost, bytes: number): number {
  const read = cost.readByReceiver;
  return Math.ceil(cost.latencyNs + cost.messagesNs + (read !== null && bytes >= read.fromBytes ? read.nsPerByte : cost.nsPerByte) * bytes);
}

/** What the links are: from the job's topology where it has one, else by where the ranks are. */
export interface LinkFacts {
  readonly worldSize: number;
  readonly plane: 'native' | 'js';
  readonly topology: CollectiveTopology | null;
  /** Every rank on one host. */
  readonly ranksShareHost: boolean;
  /** The topology groups (ranks sharing fast links, a host's), else null. */
  readonly groups: readonly (readonly number[])[] | null;
}

interface Link extends LinkCost {
  /** The host whose way out it takes (another host's ranks at its end), else null. */
  readonly leaves: number | null;
  /** Its receiver copies large payloads out of its sender's memory (native plane, one host). */
  readonly readByReceiver: boolean;
}

/**
 * Each directed link's cost. Without a topology: ranks on one host, or in one group, are
 * `same host`; others `across hosts`. With one: its link's latency and bandwidth (striped over
 * its rails). Either way a link between two groups leaves through its group's way out (where there
 * are no groups and not every rank shares a host, each rank is its own). Undefined where the
 * topology has no link.
 */
export function linksOf(facts: LinkFacts): (source: number, destination: number) => Link | undefined {
  const { ranksShareHost, groups, topology, plane } = facts;
  const hostOf = new Map(groups?.flatMap((members, group) => members.map((rank) => [rank, group] as const)) ?? []);
  const host = (rank: number) => hostOf.get(rank) ?? rank;
  return (source, destination) => {
    const apart = !ranksShareHost && host(source) !== host(destination);
    // Groups share a way out wherever they come from (declared links, GX1_TOPOLOGY_GROUPS).
    const leaves = host(source) === host(destination) || (groups === null && ranksShareHost) ? null : host(source);
    const readByReceiver = !apart && COST_SETTINGS[plane].readByReceiverFromBytes !== null;
    if (topology !== null) {
      const link = topology.link(source, destination);
      const bandwidthMbps = stripedBandwidth(topology, source, destination);
      return link === undefined || bandwidthMbps === undefined ? undefined : { latencyNs: link.latencyNs, bandwidthMbps, leaves, readByReceiver };
    }
    const kind: LinkClass = apart ? 'across hosts' : 'same host';
    return { ...COST_SETTINGS[plane].links[kind], leaves, readByReceiver };
  };
}

/**
 * Where a rank's receive is matched: the sender, and the labels both ends give the message. A
 * number where the label fits the wire's fields (./schedule/message-label.ts; no string to build
 * for the thousands of messages of a large world), else a string: either way one key per message.
 */
function labelOf(worldSize: number, peer: number, message: { step: number; channel: number; stripe?: number }): number | string {
  const { step, channel, stripe = 0 } = message;
  if (step >= 0 && step < 0x1000 && channel >= 0 && channel < 0x4000 && stripe >= 0 && stripe < 0x40 && worldSize < 0x100000) {
    return ((stripe * 0x4000 + channel) * 0x1000 + step) * worldSize + peer;
  }
  return `${peer} ${step} ${channel} ${stripe}`;
}

/**
 * The cost of the schedules `scheduleOf` writes for every rank (of `referenceBytes`), on the
 * links `facts` describe; null where a link is missing or a send has no receive.
 *
 * `rotated`: every rank's schedule is rank 0's with each peer moved on by the rank, and every link
 * costs the same (the caller knows both). Then every rank's steps are ready when rank 0's are and
 * carry its bytes, so rank 0 alone is written and reckoned: the job's N(N-1) messages of an
 * all-pairs or ring schedule become rank 0's N.
 */
export function shapeCost(scheduleOf: (rank: number) => Schedule, facts: LinkFacts, referenceBytes: number, rotated = false): ShapeCost | null {
  const { worldSize, plane } = facts;
  /** The written rank whose steps are `rank`'s. */
  const standIn = (rank: number) => (rotated ? 0 : rank);
  const linkAt = linksOf(facts);
  // Each pair's link once, in a flat table (null: not looked up yet).
  const links: (Link | undefined | null)[] = new Array(worldSize * worldSize).fill(null);
  const linkOf = (source: number, destination: number): Link | undefined => {
    const pair = source * worldSize + destination;
    let link = links[pair];
    if (link === null) links[pair] = link = linkAt(source, destination);
    return link;
  };
  const schedules = Array.from({ length: rotated ? 1 : worldSize }, (_, rank) => scheduleOf(rank));
  // Every rank's receives, folds and sends numbered in one run (rank by rank, receives then folds
  // then sends), so a step's readiness is one slot of one array and no reckoning allocates.
  const receivesAt = new Int32Array(schedules.length);
  const foldsAt = new Int32Array(schedules.length);
  const sendsAt = new Int32Array(schedules.length);
  let steps = 0;
  schedules.forEach((schedule, rank) => {
    receivesAt[rank] = steps;
    foldsAt[rank] = steps += schedule.receives.length;
    sendsAt[rank] = steps += schedule.folds.length;
    steps += schedule.sends.length;
  });
  const slotOf = (rank: number, dependency: Dependency): number =>
    'receive' in dependency ? receivesAt[rank]! + dependency.receive : 'fold' in dependency ? foldsAt[rank]! + dependency.fold : sendsAt[rank]! + dependency.send;
  // Each receive's send (its slot), matched by sender and label (rotated: the receiver's receive
  // is its stand-in's from the sender moved back by the receiver).
  const receiveOf = schedules.map((schedule) => new Map(schedule.receives.map((receive, index) => [labelOf(worldSize, receive.peer, receive), index])));
  const senderOf = new Int32Array(steps).fill(-1);
  schedules.forEach((schedule, rank) =>
    schedule.sends.forEach((send, index) => {
      const receiver = standIn(send.peer);
      const receive = receiveOf[receiver]?.get(labelOf(worldSize, rotated ? (rank - send.peer + worldSize) % worldSize : rank, send));
      if (receive === undefined) throw new Error(`rank ${rank}'s send ${index} to ${send.peer} has no receive`);
      senderOf[receivesAt[receiver]! + receive] = sendsAt[rank]! + index;
    }),
  );
  // When each receive's bytes arrive, each fold ends, each send starts (NaN: not reckoned yet).
  const ready = new Float64Array(steps).fill(Number.NaN);
  const at = (rank: number, slot: number): number => {
    const known = ready[slot]!;
    if (!Number.isNaN(known)) return known;
    const schedule = schedules[rank]!;
    let time: number;
    if (slot < foldsAt[rank]!) {
      const index = slot - receivesAt[rank]!;
      const peer = schedule.receives[index]!.peer;
      const send = senderOf[slot]!;
      if (send === -1) throw new Error(`rank ${rank}'s receive ${index} from ${peer} has no send`);
      time = at(standIn(peer), send) + linkOf(peer, rank)!.latencyNs;
    } else if (slot < sendsAt[rank]!) {
      time = 0;
      for (const after of schedule.folds[slot - foldsAt[rank]!]!.after) time = Math.max(time, producedAt(rank, after));
    } else {
      time = producedAt(rank, schedule.sends[slot - sendsAt[rank]!]!.after);
    }
    ready[slot] = time;
    return time;
  };
  const producedAt = (rank: number, after: Dependency | Producers | null): number => {
    if (after === null) return 0;
    if (!('parts' in after)) return at(rank, slotOf(rank, after));
    let time = 0;
    for (const part of after.parts) time = Math.max(time, at(rank, slotOf(rank, part)));
    return time;
  };
  let latencyNs = 0;
  let messages = 0;
  let transferNs = 0;
  // The transfer term where the receivers read every same-host payload, and the smallest such payload.
  let readTransferNs = 0;
  let smallestRead = Infinity;
  let foldNs = 0;
  const leaving = new Map<number, { bytes: number; fastestMbps: number }>();
  for (let rank = 0; rank < schedules.length; rank++) {
    const schedule = schedules[rank]!;
    for (let slot = receivesAt[rank]!; slot < sendsAt[rank]!; slot++) latencyNs = Math.max(latencyNs, at(rank, slot));
    messages = Math.max(messages, schedule.sends.length + schedule.receives.length);
    const perPeer = new Map<number, number>();
    for (const send of schedule.sends) perPeer.set(send.peer, (perPeer.get(send.peer) ?? 0) + send.span.bytes);
    const sent = { bytes: 0, fastestMbps: 0 };
    const sentByItself = { bytes: 0, fastestMbps: 0 };
    for (const [peer, bytes] of perPeer) {
      const link = linkOf(rank, peer);
      if (link === undefined) return null;
      transferNs = Math.max(transferNs, (bytes * 1000) / link.bandwidthMbps);
      readTransferNs = Math.max(readTransferNs, (bytes * 1000) / link.bandwidthMbps);
      sent.bytes += bytes;
      sent.fastestMbps = Math.max(sent.fastestMbps, link.bandwidthMbps);
      if (!link.readByReceiver) {
        sentByItself.bytes += bytes;
        sentByItself.fastestMbps = Math.max(sentByItself.fastestMbps, link.bandwidthMbps);
      }
      if (link.leaves !== null) {
        const out = leaving.get(link.leaves) ?? { bytes: 0, fastestMbps: 0 };
        leaving.set(link.leaves, { bytes: out.bytes + bytes, fastestMbps: Math.max(out.fastestMbps, link.bandwidthMbps) });
      }
    }
    if (sent.bytes > 0) transferNs = Math.max(transferNs, (sent.bytes * 1000) / sent.fastestMbps);
    if (sentByItself.bytes > 0) readTransferNs = Math.max(readTransferNs, (sentByItself.bytes * 1000) / sentByItself.fastestMbps);
    const read = { bytes: 0, fastestMbps: 0 };
    for (const receive of schedule.receives) {
      const link = linkOf(receive.peer, rank);
      if (link === undefined || !link.readByReceiver || receive.span.bytes === 0) continue;
      read.bytes += receive.span.bytes;
      read.fastestMbps = Math.max(read.fastestMbps, link.bandwidthMbps);
      smallestRead = Math.min(smallestRead, receive.span.bytes);
    }
    if (read.bytes > 0) readTransferNs = Math.max(readTransferNs, (read.bytes * 1000) / read.fastestMbps);
    const folded = schedule.folds.reduce((sum, fold) => sum + fold.target.bytes * fold.sources.length, 0);
    foldNs = Math.max(foldNs, (folded * 1000) / COST_SETTINGS[plane].foldMbps);
  }
  for (const out of leaving.values()) {
    transferNs = Math.max(transferNs, (out.bytes * 1000) / out.fastestMbps);
    readTransferNs = Math.max(readTransferNs, (out.bytes * 1000) / out.fastestMbps);
  }
  const perByte = (ns: number) => (referenceBytes === 0 ? 0 : (ns + foldNs) / referenceBytes);
  const fromBytes = COST_SETTINGS[plane].readByReceiverFromBytes;
  const readByReceiver = fromBytes === null || smallestRead === Infinity ? null : { fromBytes: Math.ceil((fromBytes * referenceBytes) / smallestRead), nsPerByte: perByte(readTransferNs) };
  return { latencyNs, messagesNs: messages * COST_SETTINGS[plane].messageNs, nsPerByte: perByte(transferNs), readByReceiver };
}

/**
 * A scheduled row's schedules as they run on `plane`, with the agreement's header-only messages,
 * which count as messages: the native plane's where a link opens with one
 * (./schedule/header-exchange.ts), the JS plane's to every peer and the successor
 * (./schedule/link-agreement.ts).
 */
export function plannedSchedules(write: ScheduleOf, input: Omit<ScheduleInput, 'rank'>, plane: 'native' | 'js'): (rank: number) => Schedule {
  const written = new Map<number, Schedule>();
  const of = (rank: number) => {
    let schedule = written.get(rank);
    if (schedule === undefined) written.set(rank, (schedule = write({ ...input, rank })));
    return schedule;
  };
  return plane === 'native' ? (rank) => withHeaderExchange(of, input.worldSize, rank) : (rank) => withHeadersAlone(of(rank), rank, input.worldSize);
}
