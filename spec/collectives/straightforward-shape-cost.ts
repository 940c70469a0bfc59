/**
 * The test's reference model of lib/collectives/choice-cost.ts `shapeCost`: the straightforward
 * reckoning it replaced (#47 item 5), labels as strings, each step's readiness found through the
 * dependency objects, links in a map. The pricing must give exactly its numbers.
 */
import { COST_SETTINGS } from '../../lib/collectives/cost-settings.js';
import { type LinkFacts, linksOf, type ShapeCost } from '../../lib/collectives/choice-cost.js';
import type { Dependency, Producers, Schedule } from '../../lib/collectives/schedule/schedule.js';

type Link = NonNullable<ReturnType<ReturnType<typeof linksOf>>>;

/** Where a rank's receive is matched: the sender, and the labels both ends give the message. */
const labelOf = (peer: number, message: { step: number; channel: number; stripe?: number }) => `${peer} ${message.step} ${message.channel} ${message.stripe ?? 0}`;

/**
 * The cost of the schedules `scheduleOf` writes for every rank (of `referenceBytes`), on the
 * links `facts` describe; null where a link is missing or a send has no receive.
 */
export function straightforwardShapeCost(scheduleOf: (rank: number) => Schedule, facts: LinkFacts, referenceBytes: number): ShapeCost | null {
  const { worldSize, plane } = facts;
  const linkAt = linksOf(facts);
  const links = new Map<number, Link | undefined>();
  const linkOf = (source: number, destination: number): Link | undefined => {
    const pair = source * worldSize + destination;
    if (!links.has(pair)) links.set(pair, linkAt(source, destination));
    return links.get(pair);
  };
  const schedules = Array.from({ length: worldSize }, (_, rank) => scheduleOf(rank));
  // Each rank's receives by sender and label, to find the receive of a send.
  const receiveOf = schedules.map((schedule) => new Map(schedule.receives.map((receive, index) => [labelOf(receive.peer, receive), index])));
  const senderOf = schedules.map(() => new Map<number, number>());
  schedules.forEach((schedule, rank) =>
    schedule.sends.forEach((send, index) => {
      const receive = receiveOf[send.peer]?.get(labelOf(rank, send));
      if (receive === undefined) throw new Error(`rank ${rank}'s send ${index} to ${send.peer} has no receive`);
      senderOf[send.peer]!.set(receive, index);
    }),
  );
  // When each receive's bytes arrive, each fold ends, each send starts (NaN: not reckoned yet).
  const ready = schedules.map((schedule) => ({
    receive: new Float64Array(schedule.receives.length).fill(Number.NaN),
    fold: new Float64Array(schedule.folds.length).fill(Number.NaN),
    send: new Float64Array(schedule.sends.length).fill(Number.NaN),
  }));
  const at = (rank: number, dependency: Dependency): number => {
    const [kind, index] = 'receive' in dependency ? (['receive', dependency.receive] as const) : 'fold' in dependency ? (['fold', dependency.fold] as const) : (['send', dependency.send] as const);
    const known = ready[rank]![kind][index]!;
    if (!Number.isNaN(known)) return known;
    const schedule = schedules[rank]!;
    let time: number;
    if (kind === 'receive') {
      const peer = schedule.receives[index]!.peer;
      const send = senderOf[rank]!.get(index);
      if (send === undefined) throw new Error(`rank ${rank}'s receive ${index} from ${peer} has no send`);
      time = at(peer, { send }) + linkOf(peer, rank)!.latencyNs;
    } else if (kind === 'fold') {
      time = Math.max(0, ...schedule.folds[index]!.after.map((after) => producedAt(rank, after)));
    } else {
      time = producedAt(rank, schedule.sends[index]!.after);
    }
    ready[rank]![kind][index] = time;
    return time;
  };
  const producedAt = (rank: number, after: Dependency | Producers | null): number => {
    if (after === null) return 0;
    return 'parts' in after ? Math.max(0, ...after.parts.map((part) => at(rank, part))) : at(rank, after);
  };
  // Every link a rank sends on, with its bytes; null where one is missing.
  const sentOn = schedules.map((schedule, rank) =>
    [...new Set(schedule.sends.map((send) => send.peer))].map((peer) => ({
      link: linkOf(rank, peer),
      bytes: schedule.sends.filter((send) => send.peer === peer).reduce((sum, send) => sum + send.span.bytes, 0),
    })),
  );
  const latencyNs = Math.max(0, ...schedules.flatMap((schedule, rank) => [...schedule.receives.map((_, receive) => at(rank, { receive })), ...schedule.folds.map((_, fold) => at(rank, { fold }))]));
  if (sentOn.some((links) => links.some(({ link }) => link === undefined))) return null;
  const messages = Math.max(0, ...schedules.map((schedule) => schedule.sends.length + schedule.receives.length));
  const ns = (bytes: number, mbps: number) => (bytes * 1000) / mbps;
  const byLink = sentOn.flat().map(({ link, bytes }) => ns(bytes, link!.bandwidthMbps));
  // A rank's bytes out over its fastest link's; a host's bytes to other hosts over its fastest such link's.
  const byRank = sentOn.filter((links) => links.length > 0).map((links) => ns(links.reduce((sum, { bytes }) => sum + bytes, 0), Math.max(...links.map(({ link }) => link!.bandwidthMbps))));
  const hosts = new Set(sentOn.flat().flatMap(({ link }) => (link!.leaves === null ? [] : [link!.leaves])));
  const byHost = [...hosts].map((host) => {
    const out = sentOn.flat().filter(({ link }) => link!.leaves === host);
    return ns(out.reduce((sum, { bytes }) => sum + bytes, 0), Math.max(...out.map(({ link }) => link!.bandwidthMbps)));
  });
  const transferNs = Math.max(0, ...byLink, ...byRank, ...byHost);
  // Where receivers read the same-host payloads: a rank's bytes out on the other links, and its bytes read, each over its fastest such link's.
  const outByItself = sentOn.map((links) => links.filter(({ link }) => !link!.readByReceiver)).filter((links) => links.length > 0);
  const byRankItself = outByItself.map((links) => ns(links.reduce((sum, { bytes }) => sum + bytes, 0), Math.max(...links.map(({ link }) => link!.bandwidthMbps))));
  const readOn = schedules.map((schedule, rank) => schedule.receives.filter((receive) => receive.span.bytes > 0 && linkOf(receive.peer, rank)?.readByReceiver === true).map((receive) => ({ bytes: receive.span.bytes, link: linkOf(receive.peer, rank)! })));
  const byReader = readOn.filter((reads) => reads.length > 0).map((reads) => ns(reads.reduce((sum, { bytes }) => sum + bytes, 0), Math.max(...reads.map(({ link }) => link.bandwidthMbps))));
  const readTransferNs = Math.max(0, ...byLink, ...byRankItself, ...byReader, ...byHost);
  const foldNs = Math.max(0, ...schedules.map((schedule) => ns(schedule.folds.reduce((sum, fold) => sum + fold.target.bytes * fold.sources.length, 0), COST_SETTINGS[plane].foldMbps)));
  const perByte = (transfer: number) => (referenceBytes === 0 ? 0 : (transfer + foldNs) / referenceBytes);
  const reads = readOn.flat();
  const fromBytes = COST_SETTINGS[plane].readByReceiverFromBytes;
  const readByReceiver = fromBytes === null || reads.length === 0 ? null : { fromBytes: Math.ceil((fromBytes * referenceBytes) / Math.min(...reads.map(({ bytes }) => bytes))), nsPerByte: perByte(readTransferNs) };
  return { latencyNs, messagesNs: messages * COST_SETTINGS[plane].messageNs, nsPerByte: perByte(transferNs), readByReceiver };
}

