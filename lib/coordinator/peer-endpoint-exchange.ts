import { catchError, firstValueFrom, forkJoin, map, type SchedulerLike, take, throwError, timeout } from 'rxjs';
import { ConfigurationError, TimeoutError } from '../errors.js';
import { ANY_RANK, FLAG_PAYLOAD } from '../protocol/constants.js';
import { ElementType } from '../protocol/element-type.js';
import type { Frame } from '../protocol/frame.js';
import { Opcode } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import { type FrameChannel, outgoing } from '../transport/frame-channel.js';
import { endpointEntriesFrame } from '../transport/endpoint-entries.js';
import { choiceSettingsDiffer } from '../transport/choice-attribute.js';
import { type RankEndpoints, readRankPublication } from '../transport/peer-endpoint-config.js';

export interface EndpointExchangeOptions {
  readonly uniqueId: UniqueId;
  readonly rails: number;
  readonly timeoutMs: number;
  readonly scheduler: SchedulerLike;
}

/**
 * tcp_peer set-up on the coordinator (the reference design's `exchange_peer_endpoints_server`):
 * every rank publishes its listen endpoints (one shared, or one per rail, the first with what it
 * offers: the native data plane) as a PeerEndpoint frame on its collective channel; once all have,
 * each rank gets its own entry and its ring successor's (revision 14; the reference design sent
 * every rank the whole table, W entries to each of W ranks through this one process), and the
 * ranks complete the table among themselves (`GatherLinks`). An unspecified IP is replaced by the
 * address the coordinator sees the rank connect from, so a rank learns its own entry from here. A
 * rank that does not publish within the collective timeout fails the exchange, naming it.
 */
export async function exchangePeerEndpoints(channels: readonly FrameChannel[], options: EndpointExchangeOptions): Promise<void> {
  const worldSize = channels.length;
  const published = new Array<boolean>(worldSize).fill(false);
  const table = await firstValueFrom(
    forkJoin(
      channels.map((channel, rank) =>
        channel.frames$.pipe(
          take(1),
          timeout({ first: options.timeoutMs, scheduler: options.scheduler, with: () => throwError(() => missing(published, options.timeoutMs)) }),
          map((frame) => {
            const endpoints = readPublication(frame, rank, worldSize, options, channel.socket.remoteAddress ?? '127.0.0.1');
            published[rank] = true;
            return endpoints;
          }),
          catchError((error: unknown) =>
            throwError(() =>
              error instanceof Error && error.name === 'EmptyError'
                ? new ConfigurationError(`rank ${rank} closed before publishing its direct peer endpoint`)
                : error,
            ),
          ),
        ),
      ),
    ),
  );
  const job = { uniqueId: options.uniqueId, worldSize, rails: options.rails };
  const apart = choosingApart(table);
  if (apart !== null) {
    // Every rank gets the two entries that differ, and fails alike naming them, before any collective.
    const run = [table[apart - 1]!, table[apart]!];
    channels.forEach((channel, rank) => channel.send(outgoing(endpointEntriesFrame(job, { source: 0, destination: rank, first: apart - 1 }, run))));
    throw choiceSettingsDiffer(apart - 1, run[0]!.choice, apart, run[1]!.choice);
  }
  // Agreed: the ranks need the settings no more, and the gather carries none.
  const entries = table.map(({ endpoints, dataPlane }): RankEndpoints => ({ endpoints, dataPlane }));
  channels.forEach((channel, rank) => {
    const run = worldSize === 1 ? [entries[rank]!] : [entries[rank]!, entries[(rank + 1) % worldSize]!];
    channel.send(outgoing(endpointEntriesFrame(job, { source: 0, destination: rank, first: rank }, run)));
  });
}

/** The lowest rank whose choice settings are not its predecessor's (as text), else null: every rank's are alike. */
function choosingApart(table: readonly RankEndpoints[]): number | null {
  const rank = table.findIndex((entry, rank) => rank > 0 && entry.choice !== table[rank - 1]!.choice);
  return rank < 0 ? null : rank;
}

function missing(published: readonly boolean[], timeoutMs: number): TimeoutError {
  const ranks = published.flatMap((done, rank) => (done ? [] : [rank]));
  return new TimeoutError(`direct peer endpoint exchange after ${timeoutMs} ms; missing ranks [${ranks.join(',')}]`);
}

function readPublication(frame: Frame, rank: number, worldSize: number, options: EndpointExchangeOptions, peerHost: string): RankEndpoints {
  const h = frame.header;
  const valid =
    h.opcode === Opcode.PeerEndpoint &&
    h.elementType === ElementType.U8 &&
    h.uniqueId.equals(options.uniqueId) &&
    h.sourceRank === rank &&
    h.destinationRank === ANY_RANK &&
    h.rootRank === ANY_RANK &&
    h.worldSize === worldSize &&
    h.sequence === 0n &&
    h.tag === BigInt(options.rails) &&
    h.flags === FLAG_PAYLOAD &&
    h.elementCount === frame.payload.length;
  if (!valid) {
    throw new ConfigurationError(
      `rank ${rank} published an invalid direct peer endpoint frame: opcode ${h.opcode}, element type ${h.elementType}, ` +
        `source ${h.sourceRank}, world ${h.worldSize}, sequence ${h.sequence}, tag ${h.tag} (expected ${options.rails} rails), ` +
        `flags 0x${h.flags.toString(16)}, payload bytes ${frame.payload.length}`,
    );
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(frame.payload);
  } catch {
    throw new ConfigurationError(`rank ${rank} direct peer endpoints are not UTF-8`);
  }
  return readRankPublication(text, rank, options.rails, peerHost);
}
