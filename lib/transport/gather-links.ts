import { firstValueFrom, from, map, merge, type Observable, type SchedulerLike, take, throwError, timeout, timer, toArray } from 'rxjs';
import { ChannelClosedError, ConfigurationError, ProtocolError, RemoteAbortError, RxcclError, TimeoutError } from '../errors.js';
import { abortReason, peerHelloHeader } from '../protocol/control-frames.js';
import { Opcode } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import { dialAuthenticated } from './dial-authenticated.js';
import { endpointEntriesFrame, readEndpointEntries } from './endpoint-entries.js';
import { EndpointGather } from './endpoint-gather.js';
import { FrameChannel, outgoing } from './frame-channel.js';
import { dialHandshake } from './handshake.js';
import type { JobSecret } from './job-secret.js';
import { type AcceptedPeer, checkHello, type PeerAccepts, refusePeer } from './peer-accepts.js';
import { formatEndpoint, type RankEndpoints } from './peer-endpoint-config.js';
import { dialSocket, type TlsSettings } from './tls-settings.js';
import { MAX_TIMER_DELAY_MS } from './transport-kind.js';

/**
 * The tag a PeerHello (and its AuthResponse's claim) carries on a link of the endpoint gather
 * ("GATH"): no rail (rails are 0..63) and no data link (docs/protocol.md 8.3, 9.9).
 */
export const GATHER_LINK = 0x47415448;

/** How long a rank whose partner closed its link waits for the job's failure, which names the rank that died. */
const PARTNER_CLOSED_GRACE_MS = 500;

export interface GatherOptions {
  readonly uniqueId: UniqueId;
  readonly rank: number;
  readonly worldSize: number;
  readonly rails: number;
  readonly secret: JobSecret | null;
  readonly tls: TlsSettings | null;
  /** The whole gather's bound (the session timeout). */
  readonly timeoutMs: number;
  readonly scheduler: SchedulerLike;
}

/**
 * The endpoint gather over the ranks' own links (docs/protocol.md 8.3, "The endpoint gather";
 * the rounds are `EndpointGather`'s). Each round dials a partner's rail 0 endpoint, authenticates
 * as any direct link does (claim rail `GATHER_LINK`), says hello and reads the run of entries the
 * partner answers with; the link then ends. The rank serves the partners behind it on the
 * listeners it will build its mesh on (`accepts` passes their links here), for as long as those
 * listen: a partner may ask after this rank has its table.
 */
export class GatherLinks {
  /** The rounds, once the coordinator told this rank where it and its successor are (`table`). */
  private gather: EndpointGather<RankEndpoints> | null = null;
  private readonly started: Promise<EndpointGather<RankEndpoints>>;
  private start: (gather: EndpointGather<RankEndpoints>) => void = () => undefined;
  private abandon: (error: unknown) => void = () => undefined;
  /** Links dialled and not yet ended (closed if the gather ends first). */
  private readonly dialled = new Set<FrameChannel>();
  /** The partners behind that have asked, by rank: each asks once. */
  private readonly asked = new Set<number>();

  /** Takes the gather's links from `accepts` from now on: a partner may ask before this rank has heard from the coordinator. */
  constructor(
    private readonly options: GatherOptions,
    accepts: PeerAccepts,
  ) {
    this.started = new Promise((resolve, reject) => {
      this.start = resolve;
      this.abandon = reject;
    });
    // A gather closed before it started has nobody waiting on `started` but the partners it refuses.
    this.started.catch(() => undefined);
    accepts.divert = (peer) => {
      if (peer.hello.header.tag !== BigInt(GATHER_LINK)) return false;
      void this.serve(peer);
      return true;
    };
  }

  /**
   * Runs the rounds: the whole table by rank. Rejects with the first failure (a partner
   * unreachable, refusing, closing or silent past the timeout), or with `ended`'s (the session
   * failed: the coordinator named a rank lost meanwhile).
   */
  async table(own: RankEndpoints, successor: RankEndpoints, ended: Observable<never>): Promise<RankEndpoints[]> {
    const { rank, worldSize, timeoutMs, scheduler } = this.options;
    const deadline = Date.now() + timeoutMs;
    const gather = new EndpointGather(rank, worldSize, own, successor);
    this.gather = gather;
    this.start(gather);
    const rounds = gather.run((distance, count, partner) => this.ask((rank + distance) % worldSize, partner, count, deadline));
    try {
      return await firstValueFrom(
        merge(
          from(rounds).pipe(
            timeout({ first: Math.min(timeoutMs, MAX_TIMER_DELAY_MS), scheduler, with: () => throwError(() => new TimeoutError(`rank ${rank} gathering the direct peer endpoint table`)) }),
          ),
          ended,
        ),
      );
    } catch (error) {
      // A partner that closed its link without a word most likely failed because a rank died: the
      // job's failure (the coordinator's notice, naming that rank) comes shortly, and says more.
      const cause = error instanceof ChannelClosedError ? await firstValueFrom(merge(ended, timer(PARTNER_CLOSED_GRACE_MS, scheduler).pipe(map(() => error)))).catch((failure: unknown) => failure) : error;
      this.close(cause);
      throw cause;
    }
  }

  /** Ends the gather: partners still waiting for an answer are refused with `reason`, links still dialled closed. */
  close(reason: unknown): void {
    this.abandon(reason);
    this.gather?.fail(reason);
    for (const channel of this.dialled) channel.destroy();
    this.dialled.clear();
  }

  private async ask(peer: number, partner: RankEndpoints, count: number, deadline: number): Promise<RankEndpoints[]> {
    const { uniqueId, rank, worldSize, rails, secret, tls, scheduler } = this.options;
    const endpoint = partner.endpoints[0]!;
    const reach = `direct peer rank ${peer} endpoint gather link at ${formatEndpoint(endpoint)}`;
    const channel = await dialAuthenticated({
      listener: `direct peer rank ${peer}`,
      rank,
      deadline,
      connect: async (left) => {
        const socket = await dialSocket(endpoint.host, endpoint.port, tls, left, () => new TimeoutError(`reaching ${reach}`)).catch((error: unknown) => {
          if (error instanceof TimeoutError) throw error;
          throw new ConfigurationError(`cannot reach ${reach}: ${(error as Error).message}`, { cause: error });
        });
        return new FrameChannel(socket);
      },
      authenticate: (opened, left) => dialHandshake(opened, { secret, claim: { rank, worldSize, peer, rail: GATHER_LINK }, timeoutMs: left, scheduler, acceptor: `direct peer rank ${peer}` }),
    });
    this.dialled.add(channel);
    try {
      channel.send({ header: peerHelloHeader({ uniqueId, rank, worldSize }, peer, GATHER_LINK), parts: [] });
      // Its hello, then its run once it knows it; then it ends the link.
      const [hello, run] = await firstValueFrom(channel.frames$.pipe(take(2), toArray())).catch((error: unknown) => {
        throw error instanceof RxcclError ? error : closedEarly(peer);
      });
      if (hello === undefined) throw closedEarly(peer);
      checkHello(hello, { uniqueId, rank, worldSize }, peer, GATHER_LINK);
      if (run === undefined) throw closedEarly(peer);
      if (run.header.opcode === Opcode.Abort) {
        const reason = abortReason(run);
        throw new RemoteAbortError(reason, `direct peer rank ${peer} aborted: ${reason}`);
      }
      return readEndpointEntries(run, { uniqueId, worldSize, rails }, { source: peer, destination: rank, first: (peer + 1) % worldSize, count }, `direct peer rank ${peer}`);
    } finally {
      this.dialled.delete(channel);
      channel.destroy();
    }
  }

  /** A partner behind asks for the run after this rank: answered once this rank knows it. */
  private async serve({ listenerRail, channel, hello }: AcceptedPeer): Promise<void> {
    const { uniqueId, rank, worldSize, rails } = this.options;
    const asker = hello.header.sourceRank;
    try {
      checkHello(hello, { uniqueId, rank, worldSize }, asker, GATHER_LINK);
      if (listenerRail !== null && listenerRail !== 0) throw new ProtocolError(`direct peer rank ${asker} dialled the rail ${listenerRail} listener for its endpoint gather link (rail 0's)`);
      if (this.asked.has(asker)) throw new ProtocolError(`direct peer rank ${asker} endpoint gather link connected twice`);
      this.asked.add(asker);
      channel.send({ header: peerHelloHeader({ uniqueId, rank, worldSize }, asker, GATHER_LINK), parts: [] });
      const gather = await this.started;
      const entries = await gather.entriesFor((rank - asker + worldSize) % worldSize);
      channel.send(outgoing(endpointEntriesFrame({ uniqueId, worldSize, rails }, { source: rank, destination: asker, first: (rank + 1) % worldSize }, entries)));
      channel.finish();
    } catch (error) {
      refusePeer(channel, this.options, error);
    }
  }
}

function closedEarly(peer: number): ChannelClosedError {
  return new ChannelClosedError(`direct peer rank ${peer} closed its endpoint gather link before sending its endpoints (it failed or was stopped)`);
}
