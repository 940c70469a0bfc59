import type { Socket } from 'node:net';
import { ChannelClosedError, ConfigurationError, ProtocolError, RemoteAbortError, RxcclError, TimeoutError } from '../errors.js';
import { ANY_RANK, FLAG_P2P_CHANNEL } from '../protocol/constants.js';
import { ANY_WORLD_SIZE, joinerHeader, joinHeader } from '../protocol/control-frames.js';
import { frameText } from '../protocol/frame.js';
import { type GrownJob, readGrownJob } from '../protocol/grown-job.js';
import type { FrameHeader } from '../protocol/header.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import { firstFrame } from './first-frame.js';
import { FrameChannel } from './frame-channel.js';
import { dialAuthenticated } from './dial-authenticated.js';
import { dialHandshake, secretRequired } from './handshake.js';
import type { JobSecret } from './job-secret.js';
import { speaksTls } from './tls-probe.js';
import { dialSocket, type TlsSettings } from './tls-settings.js';
import { readyTransport } from './ready-transport.js';
import type { CollectiveTransport } from './transport-kind.js';
import { validateResponse } from './validate-response.js';

export interface ChannelAddress {
  readonly host: string;
  readonly port: number;
}

export interface JoinRequest {
  readonly uniqueId: UniqueId;
  readonly rank: number;
  readonly worldSize: number;
  /** null for the collective channel, else the P2P rail index. */
  readonly rail: number | null;
  readonly timeoutMs: number;
  /** The job's secret: the coordinator must challenge for it, and prove it knows it too. */
  readonly secret?: JobSecret | null;
  /** TLS for the connection (docs/architecture.md, threat model); plain TCP when absent. */
  readonly tls?: TlsSettings | null;
}

const RETRY_DELAY_MS = 50;
/**
 * How much longer than its timeout a rank waits for READY: the coordinator's rendezvous timeout
 * starts when the JOIN arrives, and its Abort naming the ranks that have not joined is the better
 * error.
 */
export const READY_REPORT_GRACE_MS = 1_000;

/**
 * Connects to the coordinator (TLS when configured), retrying refused connections (it may still
 * be starting) unless `once`.
 */
async function connectSocket(address: ChannelAddress, rank: number, deadline: number, tls: TlsSettings | null, once: boolean): Promise<Socket> {
  for (;;) {
    try {
      return await dialSocket(address.host, address.port, tls, deadline - Date.now(), () => new TimeoutError(`connecting to coordinator ${address.host}:${address.port}`));
    } catch (error) {
      const refused = (error as NodeJS.ErrnoException).code === 'ECONNREFUSED';
      if (!refused || once || Date.now() + RETRY_DELAY_MS >= deadline) {
        if (error instanceof TimeoutError) throw error;
        // A TLS handshake answered in plain bytes (GX1's, or an Abort): no TLS listener there.
        if (tls !== null && (error as NodeJS.ErrnoException).code === 'ERR_SSL_WRONG_VERSION_NUMBER') {
          throw new ConfigurationError(
            `the coordinator at ${address.host}:${address.port} does not speak TLS and rank ${rank} does: give the coordinator the job's TLS settings, or none to every rank`,
            { cause: error },
          );
        }
        throw new ConfigurationError(`cannot connect to coordinator ${address.host}:${address.port}: ${(error as Error).message}`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
    }
  }
}

/**
 * Opens one of a rank's channels to the coordinator (the reference design's
 * `connect_rank_channel`): connect, authenticate when the job has a secret, send JOIN, and wait
 * for the matching READY. An Abort in place of READY (the coordinator refused the JOIN) rejects
 * with its reason.
 */
export async function connectChannel(address: ChannelAddress, join: JoinRequest): Promise<FrameChannel> {
  return (await joinChannel(address, join)).channel;
}

/**
 * The collective channel (`connectChannel` with `rail` null), and the transport the coordinator
 * runs, as its Ready says (docs/protocol.md 8.1), or null from a coordinator that does not say.
 */
export async function connectCollectiveChannel(address: ChannelAddress, join: JoinRequest): Promise<{ channel: FrameChannel; coordinatorTransport: CollectiveTransport | null }> {
  const { channel, ready } = await joinChannel(address, join);
  return { channel, coordinatorTransport: readyTransport(ready) };
}

/** The coordinator closed a joined connection before its READY. */
class CoordinatorClosedError extends ConfigurationError {}

/**
 * What a plain-TCP rank is told where the coordinator speaks TLS: its connections end before a
 * word of GX1 (with a secret, after the listener's handshake timeout; without, at once), which
 * would otherwise read as a saturated listener or a coordinator that closed, until the rank's timeout.
 */
async function tlsListener(address: ChannelAddress, join: Pick<JoinRequest, 'rank' | 'tls'>): Promise<Error | null> {
  if ((join.tls ?? null) !== null || !(await speaksTls(address.host, address.port, TLS_PROBE_MS))) return null;
  const who = join.rank === ANY_RANK ? 'this joining process' : `rank ${join.rank}`;
  return new ConfigurationError(
    `the coordinator at ${address.host}:${address.port} speaks TLS and ${who} does not: ` +
      'give every rank the job\'s TLS settings (GX1_TLS_CERT and GX1_TLS_KEY, and GX1_TLS_CA where the job has one, or the tls option), as the coordinator has them',
  );
}

/** How long the TLS probe waits for a handshake: one round trip on a live listener. */
const TLS_PROBE_MS = 5_000;

async function joinChannel(address: ChannelAddress, join: JoinRequest): Promise<{ channel: FrameChannel; ready: FrameHeader }> {
  try {
    return await joinChannelOnce(address, join);
  } catch (error) {
    // Closed before READY, or answered with bytes that are not GX1 (a TLS alert): perhaps a TLS listener.
    if (error instanceof ProtocolError || error instanceof CoordinatorClosedError) throw (await tlsListener(address, join)) ?? error;
    throw error;
  }
}

/**
 * Connects to the coordinator and authenticates as `claim` (a rank's channel, or a joiner:
 * ANY_RANK of ANY_WORLD_SIZE) by `deadline`: the part of a JOIN every opening shares.
 */
function dialCoordinator(address: ChannelAddress, claim: Pick<JoinRequest, 'rank' | 'worldSize' | 'rail' | 'secret' | 'tls'>, deadline: number): Promise<FrameChannel> {
  const coordinator = `coordinator ${address.host}:${address.port}`;
  return dialAuthenticated({
    listener: coordinator,
    rank: claim.rank,
    deadline,
    connect: async (_timeoutMs, redial) => new FrameChannel(await connectSocket(address, claim.rank, deadline, claim.tls ?? null, redial)),
    authenticate: (opened, timeoutMs) =>
      dialHandshake(opened, {
        secret: claim.secret ?? null,
        claim: { rank: claim.rank, worldSize: claim.worldSize, peer: ANY_RANK, rail: claim.rail },
        timeoutMs,
        acceptor: coordinator,
      }),
    explainEarlyClose: () => tlsListener(address, claim),
  });
}

async function joinChannelOnce(address: ChannelAddress, join: JoinRequest): Promise<{ channel: FrameChannel; ready: FrameHeader }> {
  const p2p = join.rail !== null;
  const what = p2p ? `point-to-point rail ${join.rail}` : 'collective channel';
  const coordinator = `coordinator ${address.host}:${address.port}`;
  const channel = await dialCoordinator(address, join, Date.now() + join.timeoutMs);
  try {
    channel.send({ header: joinHeader(join, join.rail), parts: [] });
    // READY is a response: it gets the whole timeout from the JOIN, as every other response does.
    const readyBy = Date.now() + join.timeoutMs;
    const ready = await firstFrame(channel, {
      timeoutMs: join.timeoutMs + READY_REPORT_GRACE_MS,
      timedOut: () => new TimeoutError(`rank ${join.rank} waiting for READY on ${what}`),
      closed: () => new CoordinatorClosedError(`coordinator closed before READY on ${what}`),
    }).catch((error: unknown) => {
      // An Abort past the timeout is the coordinator's rendezvous report: who has not joined.
      if (error instanceof RemoteAbortError && Date.now() >= readyBy - READY_REPORT_GRACE_MS) {
        throw new RxcclError('TIMEOUT', `rank ${join.rank} waiting for READY on ${what} timed out: ${error.reason}`);
      }
      throw error;
    });
    secretRequired(ready, coordinator);
    validateResponse(ready, join.uniqueId, join.rank, join.worldSize, 0n);
    const readyP2p = (ready.header.flags & FLAG_P2P_CHANNEL) !== 0;
    if (ready.header.opcode !== Opcode.Ready || readyP2p !== p2p || ready.header.tag !== BigInt(join.rail ?? 0)) {
      throw new ConfigurationError(
        `coordinator answered JOIN on the wrong channel/rail with ${opcodeName(ready.header.opcode)} tag ${ready.header.tag}`,
      );
    }
    return { channel, ready: ready.header };
  } catch (error) {
    channel.destroy();
    throw error;
  }
}

/** What a process joining a running job (docs/protocol.md 13.9) presents: the job, its secret and TLS, how long it waits. */
export interface JoinerRequest {
  readonly uniqueId: UniqueId;
  /** How long the process waits to be admitted (the job's ranks admit at their next step boundary). */
  readonly timeoutMs: number;
  readonly secret?: JobSecret | null;
  readonly tls?: TlsSettings | null;
}

/**
 * Asks the coordinator of a running fault-tolerant job to let this process join (a JOIN claiming
 * no rank, docs/protocol.md 13.9) and waits until the job's ranks admit it: resolves with the job
 * it grew into (where to find its coordinator, this process's rank there). The coordinator's
 * refusal (the job is not fault-tolerant, is full, ended) rejects with its reason.
 */
export async function awaitAdmission(address: ChannelAddress, request: JoinerRequest): Promise<GrownJob> {
  const deadline = Date.now() + request.timeoutMs;
  const coordinator = `coordinator ${address.host}:${address.port}`;
  const channel = await dialCoordinator(address, { rank: ANY_RANK, worldSize: ANY_WORLD_SIZE, rail: null, secret: request.secret ?? null, tls: request.tls ?? null }, deadline);
  try {
    channel.send({ header: joinerHeader(request.uniqueId), parts: [] });
    const admission = await firstFrame(channel, {
      timeoutMs: deadline - Date.now(),
      timedOut: () => new TimeoutError(`waiting ${request.timeoutMs} ms to join the running job at ${coordinator}: its ranks admitted nobody (do they call grow() at their step boundaries?)`),
      closed: () => new ChannelClosedError(`${coordinator} closed before admitting this process into its job`),
    }).catch((error: unknown) => {
      throw error instanceof RemoteAbortError ? new ConfigurationError(`${coordinator} refused this process: ${error.reason}`) : error;
    });
    secretRequired(admission, coordinator);
    validateResponse(admission, request.uniqueId, ANY_RANK, ANY_WORLD_SIZE, 0n);
    if (admission.header.opcode !== Opcode.Ready) throw new ProtocolError(`${coordinator} answered a joiner's JOIN with ${opcodeName(admission.header.opcode)}`);
    return readGrownJob(frameText(admission));
  } finally {
    channel.destroy();
  }
}
