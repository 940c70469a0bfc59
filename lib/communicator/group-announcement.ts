import { lastValueFrom } from 'rxjs';
import { ProtocolError } from '../errors.js';
import { ElementType } from '../protocol/element-type.js';
import type { Links } from '../transport/links/links.js';

/**
 * `group(ranks)`'s announcement (docs/protocol.md 13.5): before the listed ranks meet, each tells
 * every other listed rank which ranks it listed. Ranks that listed different ranks meet on
 * different meetings (a meeting is named by its ranks) and would wait there for each other until
 * the timeout named one of them missing; told each other's lists, they fail at once, naming both.
 */

/** The top 16 bits of an announcement's tag ("GP"): reserved on every communicator, as the leader's "LD". */
export const GROUP_TAG_PREFIX = 0x4750;

/** The tag of the `count`-th announcement between two ranks (the group calls before it that listed both, from 0). */
export function groupAnnouncementTag(count: number): bigint {
  return (BigInt(GROUP_TAG_PREFIX) << 48n) | BigInt(count);
}

/** The ranks listed, as a bitmap of the session's ranks: bit `r % 8` of byte `r >> 3` for rank `r` (a size every rank agrees on). */
export function groupBitmap(members: readonly number[], worldSize: number): Uint8Array {
  const bytes = new Uint8Array(Math.ceil(worldSize / 8));
  for (const member of members) bytes[member >> 3]! |= 1 << (member & 7);
  return bytes;
}

/** The ranks a bitmap holds, ascending. */
export function bitmapMembers(bytes: Uint8Array): number[] {
  const members: number[] = [];
  bytes.forEach((byte, index) => {
    for (let bit = 0; bit < 8; bit++) if ((byte >> bit) & 1) members.push(index * 8 + bit);
  });
  return members;
}

/** The mismatch's text, the same whichever of the two ranks finds it: the lower rank first, each with the ranks it listed, ascending. */
export function groupMismatch(first: { rank: number; members: readonly number[] }, second: { rank: number; members: readonly number[] }): string {
  const [low, high] = first.rank < second.rank ? [first, second] : [second, first];
  const ranks = (members: readonly number[]) => `[${[...members].sort((a, b) => a - b).join(',')}]`;
  return (
    `group mismatch: rank ${low.rank} called group with ranks ${ranks(low.members)}, rank ${high.rank} with ranks ${ranks(high.members)}: ` +
    'every rank listed calls group with the same ranks'
  );
}

export interface Announcement {
  readonly links: Links;
  /** The ranks this rank listed. */
  readonly members: readonly number[];
  /** Per other rank, how many earlier group calls of this rank listed it (this call's tags); counted here. */
  readonly counts: Map<number, number>;
  /** How long to wait for each rank's announcement: past the meeting's own timeout, which names a rank that never calls. */
  readonly waitMs: number;
  /** Ends the job with the mismatch's text, as a leader's mismatch does. */
  readonly abort: (reason: string) => void;
}

/**
 * Sends this rank's list to every other rank listed and checks theirs; resolves once every one
 * listed the same ranks, rejects at the first that did not (with PROTOCOL, after aborting the job).
 */
export function announceGroup(announcement: Announcement): Promise<void> {
  const { links, members, counts, waitMs, abort } = announcement;
  const mine = groupBitmap(members, links.worldSize);
  const shape = { elementType: ElementType.U8, count: mine.length };
  // Tags are taken now, in call order, before anything waits: a later group call takes the next.
  const peers = members.filter((member) => member !== links.rank).map((peer) => {
    const count = counts.get(peer) ?? 0;
    counts.set(peer, count + 1);
    return { peer, tag: groupAnnouncementTag(count) };
  });
  return Promise.all(
    peers.map(async ({ peer, tag }) => {
      const [theirs] = await Promise.all([
        lastValueFrom(links.receive(0, peer, tag, shape, undefined, waitMs)),
        lastValueFrom(links.send(0, peer, tag, mine, shape), { defaultValue: undefined }),
      ]);
      if (theirs.every((byte, index) => byte === mine[index])) return;
      const text = groupMismatch({ rank: links.rank, members }, { rank: peer, members: bitmapMembers(theirs) });
      abort(text);
      throw new ProtocolError(text);
    }),
  ).then(() => undefined);
}
