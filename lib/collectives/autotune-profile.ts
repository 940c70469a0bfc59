import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats } from 'node:fs';
import { ConfigurationError } from '../errors.js';
import { fnv1a64OfU64s } from '../protocol/fnv1a.js';
import type { CollectiveTopology } from '../topology/collective-topology.js';
import { parseTopologyLinks } from '../topology/ring-tuning.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';

/**
 * The reference's collective autotune profile (GX1_COLLECTIVE_AUTOTUNE_PROFILE, version 2):
 * measured algorithm choices per operation and payload range, valid for one world size, one
 * topology and one implementation, each named by a fingerprint. `rxccl tune` writes one; a
 * session that reads it lets `auto` take the measured choice (`plan().source` is `autotune`).
 *
 * The fingerprints are the reference's recipe (FNV-1a 64 over u64s, printed as 16 hex digits)
 * over rxccl's topology; the execution fingerprint names rxccl's executors instead of the
 * reference's, so a profile measured on the other implementation is refused as one from another
 * execution, as it should be.
 */

export const AUTOTUNE_PROFILE_VERSION = 2;

/** rxccl's execution revision in the execution fingerprint (the reference's is 6); a new one when the algorithms' costs change. */
export const RXCCL_EXECUTION_REVISION = 0x7278_0001;

/** The operations a profile measures, as the reference names them. */
export type ProfileOperation = 'allreduce' | 'allgather' | 'reduce_scatter' | 'alltoall';

/** Each operation's collective, as the session's methods (and `CollectiveName`) name it. */
export const PROFILE_OPERATIONS: Readonly<Record<ProfileOperation, string>> = {
  allreduce: 'allReduce',
  allgather: 'allGather',
  reduce_scatter: 'reduceScatter',
  alltoall: 'allToAll',
};

/** How Rust's Debug writes each operation in the reference's texts. */
const OPERATION_DEBUG: Readonly<Record<ProfileOperation, string>> = { allreduce: 'AllReduce', allgather: 'AllGather', reduce_scatter: 'ReduceScatter', alltoall: 'AllToAll' };

/**
 * Algorithms an entry may name: the reference's (direct, ring, pairwise, hierarchical) and rxccl's
 * rows of other names (all-pairs), which a reference rank cannot read.
 */
const ENTRY_ALGORITHMS: Readonly<Record<string, string>> = {
  direct: 'Direct',
  ring: 'Ring',
  pairwise: 'Pairwise',
  hierarchical: 'Hierarchical',
  'all-pairs': 'AllPairs',
};

/**
 * Rows a profile of an earlier rxccl may name that no longer exist, and why: refused by name, so
 * the fix (measure again) is in the message rather than a list of the names that are left.
 */
const REMOVED_ALGORITHMS: Readonly<Record<string, string>> = {
  exchange: "the JS plane's exchange rows were removed: its schedules carry their agreement on their own links now (docs/protocol.md 9.6.3); measure again with rxccl tune",
};

/** Which algorithms can run which operation (rxccl has rows of those names for it). */
const RUNS: Readonly<Record<ProfileOperation, readonly string[]>> = {
  allreduce: ['direct', 'ring', 'pairwise', 'hierarchical', 'all-pairs'],
  allgather: ['direct', 'ring', 'pairwise', 'hierarchical'],
  reduce_scatter: ['direct', 'ring', 'pairwise', 'hierarchical'],
  alltoall: ['direct', 'pairwise'],
};

export interface AutotuneEntry {
  readonly operation: ProfileOperation;
  readonly min_payload_bytes: number;
  readonly max_payload_bytes: number;
  readonly algorithm: string;
  readonly ring_channels: number;
  readonly measured_time_ns: number;
}

export interface AutotuneProfile {
  readonly version: number;
  readonly world_size: number;
  readonly topology_fingerprint: string;
  readonly execution_fingerprint: string;
  readonly entries: readonly AutotuneEntry[];
  /** The links `rxccl tune` measured (GX1_TOPOLOGY_LINKS=probe), as that variable writes them; null where they were declared. */
  readonly detected_topology_links?: string | null;
}

/** What a profile must match: the job it is read into. */
export interface ProfileJob {
  readonly worldSize: number;
  readonly transport: CollectiveTransport;
  /** The plane the session's scheduled collectives run on (`sessionPlane`). */
  readonly plane: 'native' | 'js' | 'coordinator';
  readonly ringChannels: number;
  /** The fingerprints' inputs. */
  readonly fingerprint: FingerprintInput;
}

export interface FingerprintInput {
  readonly topology: CollectiveTopology;
  readonly ringOrder: readonly number[];
  readonly groups: TopologyGroups | null;
  readonly directBandwidthMbps: number;
  readonly directLatencyNs: number;
  readonly rails: number;
  readonly railOrder: readonly number[] | null;
}

function invalid(message: string): ConfigurationError {
  return new ConfigurationError(`invalid collective autotune profile: ${message}`);
}

const hex = (value: bigint) => value.toString(16).padStart(16, '0');

/**
 * The topology fingerprint, in the reference's order: the world size; per rank pair i < j, i, j,
 * then 1, bandwidth, latency of the link i -> j or 0; the rail links (marker, rails, per rail and
 * pair) if any and more than one rail; the aggregate links (marker, per pair) if any; the ring (1 ring: its length and
 * ranks); the groups (count, then each's length and ranks as listed; 0 without); the direct
 * figures; the rails if not 1 (marker, count); the rail order if not 0, 1, ... (marker, rails).
 */
export function topologyFingerprint(input: FingerprintInput): string {
  const { topology } = input;
  const { worldSize } = topology;
  const values: (number | bigint)[] = [worldSize];
  const pairs: [number, number][] = [];
  for (let first = 0; first < worldSize; first++) for (let second = first + 1; second < worldSize; second++) pairs.push([first, second]);
  for (const [first, second] of pairs) {
    const link = topology.link(first, second);
    values.push(first, second, ...(link === undefined ? [0] : [1, link.bandwidthMbps, link.latencyNs]));
  }
  // With one rail, its links are the links (the probe records them anyway): counted once.
  if (topology.railLinks.length > 0 && topology.rails > 1) {
    values.push(0x4758_5241_494c_4c4bn, topology.rails);
    for (let rail = 0; rail < topology.rails; rail++) {
      values.push(rail);
      for (const [first, second] of pairs) {
        const link = topology.railLink(first, second, rail);
        values.push(first, second, ...(link === undefined ? [0] : [1, link.bandwidthMbps, link.latencyNs]));
      }
    }
  }
  if (topology.aggregateLinks.length > 0) {
    values.push(0x4758_4147_4752_4547n);
    for (const [first, second] of pairs) {
      const link = topology.aggregateLink(first, second);
      values.push(first, second, ...(link === undefined ? [0] : [1, link.bandwidthMbps]));
    }
  }
  values.push(1, input.ringOrder.length, ...input.ringOrder);
  if (input.groups === null) values.push(0);
  else values.push(input.groups.length, ...input.groups.flatMap((group) => [group.length, ...group]));
  values.push(input.directBandwidthMbps, input.directLatencyNs);
  if (input.rails !== 1) values.push(0x4758_5241_494c_0001n, input.rails);
  if (input.railOrder !== null && input.railOrder.some((rail, index) => rail !== index)) values.push(0x4758_5241_494c_4f52n, ...input.railOrder);
  return hex(fnv1a64OfU64s(values));
}

/** How a plane is named in the execution fingerprint. */
const PLANE_CODES: Readonly<Record<'native' | 'js' | 'coordinator', number>> = { coordinator: 1, js: 2, native: 3 };

/**
 * The execution fingerprint: rxccl's revision, the transport (the reference's codes:
 * tcp_host_staged 2, tcp_peer 3) and the session's plane (rxccl's: a profile measured on the
 * native plane names rows and times the JS plane does not have).
 */
export function executionFingerprint(transport: CollectiveTransport, plane: 'native' | 'js' | 'coordinator'): string {
  return hex(fnv1a64OfU64s([RXCCL_EXECUTION_REVISION, transport === 'tcp_peer' ? 3 : 2, PLANE_CODES[plane]]));
}

/** What a path names, for a refusal: `a FIFO`, `a directory`, ... */
function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/**
 * Reads GX1_COLLECTIVE_AUTOTUNE_PROFILE's file: a regular file holding a JSON object. It is opened
 * without blocking and checked before a byte is read, so a FIFO (or a device) is refused at once
 * instead of holding the rank until something writes to it.
 */
export function readAutotuneProfile(path: string): Record<string, unknown> {
  const text = readAutotuneProfileText(path);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalid(`${path} is not valid JSON: ${(error as Error).message}`);
  }
  // `null`, a number, an array: not a profile, and not "no profile" either (the variable asked for one).
  if (!isRecord(value)) throw invalid(`${path} must hold a JSON object, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
  return value;
}

/** `readAutotuneProfile`'s file as text, read as it says: a FIFO or a device is refused before a byte is read. */
export function readAutotuneProfileText(path: string): string {
  const cannot = (why: string) => new ConfigurationError(`cannot read collective autotune profile ${JSON.stringify(path)}: ${why}`);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    throw cannot((error as Error).message);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw cannot(`it is ${kindOf(stats)}, not a regular file`);
    return readFileSync(fd, 'utf8');
  } catch (error) {
    throw error instanceof ConfigurationError ? error : cannot((error as Error).message);
  } finally {
    closeSync(fd);
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function field<T>(record: Record<string, unknown>, name: string, where: string, is: (value: unknown) => value is T, what: string, fallback?: T): T {
  const value = record[name] ?? fallback;
  if (!is(value)) throw invalid(`${where} field "${name}" must be ${what}`);
  return value;
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
const isText = (value: unknown): value is string => typeof value === 'string';

/**
 * Checks a parsed profile against `job`, in the reference's order and with its texts: the version,
 * the world size, the topology and execution fingerprints, measurements present, each entry
 * (range, time, channels, an algorithm that can run the operation, groups for hierarchical), no
 * two ranges of one operation overlapping. Beyond the reference: an entry's channels must be the
 * job's (rxccl runs one channel count per session).
 */
export function validateAutotuneProfile(value: unknown, job: ProfileJob): AutotuneProfile {
  if (!isRecord(value)) throw invalid('the profile must be a JSON object');
  const version = field(value, 'version', 'profile', isCount, 'a count');
  if (version !== AUTOTUNE_PROFILE_VERSION) throw invalid(`unsupported version ${version}, expected ${AUTOTUNE_PROFILE_VERSION}`);
  const worldSize = field(value, 'world_size', 'profile', isCount, 'a count');
  if (worldSize !== job.worldSize) throw invalid(`world size ${worldSize} does not match configured world size ${job.worldSize}`);
  const expected = topologyFingerprint(job.fingerprint);
  const fingerprint = field(value, 'topology_fingerprint', 'profile', isText, 'a string');
  if (fingerprint.replace(/^0x/i, '').toLowerCase() !== expected) throw invalid(`topology fingerprint ${JSON.stringify(fingerprint)} does not match ${JSON.stringify(expected)}`);
  const execution = field(value, 'execution_fingerprint', 'profile', isText, 'a string', '');
  const expectedExecution = executionFingerprint(job.transport, job.plane);
  if (execution.replace(/^0x/i, '').toLowerCase() !== expectedExecution) {
    throw invalid(`execution fingerprint ${JSON.stringify(execution)} does not match ${JSON.stringify(expectedExecution)} for transport ${job.transport === 'tcp_peer' ? 'TcpPeer' : 'TcpHostStaged'}`);
  }
  const detected = value.detected_topology_links;
  if (detected !== undefined && detected !== null && typeof detected !== 'string') throw invalid('detected_topology_links must be a string or null');
  if (typeof detected === 'string') checkDetectedLinks(detected, job.worldSize);
  const list = field(value, 'entries', 'profile', Array.isArray, 'an array') as unknown[];
  if (list.length === 0) throw invalid('profile contains no measurements');
  const entries = list.map((raw, index): AutotuneEntry => {
    const where = `entries[${index}]`;
    if (!isRecord(raw)) throw invalid(`${where} must be an object`);
    const operation = field(raw, 'operation', where, (v): v is ProfileOperation => typeof v === 'string' && Object.hasOwn(PROFILE_OPERATIONS, v), 'allreduce, allgather, reduce_scatter or alltoall');
    const removed = raw['algorithm'];
    if (typeof removed === 'string' && Object.hasOwn(REMOVED_ALGORITHMS, removed)) throw invalid(`${where} field "algorithm" is "${removed}": ${REMOVED_ALGORITHMS[removed]}`);
    const algorithm = field(raw, 'algorithm', where, (v): v is string => typeof v === 'string' && Object.hasOwn(ENTRY_ALGORITHMS, v), Object.keys(ENTRY_ALGORITHMS).join(', '));
    const entry = {
      operation,
      min_payload_bytes: field(raw, 'min_payload_bytes', where, isCount, 'a count'),
      max_payload_bytes: field(raw, 'max_payload_bytes', where, isCount, 'a count'),
      algorithm,
      ring_channels: field(raw, 'ring_channels', where, isCount, 'a count', 1),
      measured_time_ns: field(raw, 'measured_time_ns', where, isCount, 'a count'),
    };
    const range = `${OPERATION_DEBUG[operation]} range ${entry.min_payload_bytes}..=${entry.max_payload_bytes}`;
    if (entry.min_payload_bytes > entry.max_payload_bytes) throw invalid(`${range} is reversed`);
    if (entry.measured_time_ns === 0) throw invalid(`${range} has zero measured time`);
    if (entry.ring_channels < 1 || entry.ring_channels > 64) throw invalid(`${range} has invalid ring channel count ${entry.ring_channels}`);
    if (!RUNS[operation].includes(algorithm)) throw invalid(`algorithm ${ENTRY_ALGORITHMS[algorithm]} cannot execute ${OPERATION_DEBUG[operation]}`);
    if (algorithm === 'hierarchical' && job.fingerprint.groups === null) throw invalid('hierarchical measurement requires configured topology groups');
    if (entry.ring_channels !== job.ringChannels) throw invalid(`${range} was measured with ${entry.ring_channels} ring channels, this job has ${job.ringChannels} (GX1_RING_CHANNELS)`);
    return entry;
  });
  checkNoOverlap(entries);
  return { version, world_size: worldSize, topology_fingerprint: fingerprint, execution_fingerprint: execution, entries, detected_topology_links: detected ?? null };
}

/** `detected_topology_links` must be links of this world, as `GX1_TOPOLOGY_LINKS` writes them: garbage is refused, not ignored. */
function checkDetectedLinks(links: string, worldSize: number): void {
  try {
    parseTopologyLinks(worldSize, links);
  } catch (error) {
    throw invalid(`detected_topology_links ${JSON.stringify(links)} are not topology links of world size ${worldSize}: ${(error as Error).message}`);
  }
}

/**
 * No two ranges of one operation overlap. Sorted by operation and start, if any range overlaps a
 * later-starting one it overlaps its successor too (the successor starts between them), so
 * neighbours suffice: n log n, where the pairwise scan took a 20,000-entry profile seconds. Names
 * the overlapping pair in the order the file lists them.
 */
function checkNoOverlap(entries: readonly AutotuneEntry[]): void {
  const order = entries.map((_, index) => index).sort((a, b) => {
    const first = entries[a]!;
    const second = entries[b]!;
    if (first.operation !== second.operation) return first.operation < second.operation ? -1 : 1;
    return first.min_payload_bytes - second.min_payload_bytes || a - b;
  });
  for (let at = 1; at < order.length; at++) {
    const earlier = Math.min(order[at - 1]!, order[at]!);
    const later = Math.max(order[at - 1]!, order[at]!);
    const entry = entries[earlier]!;
    const other = entries[later]!;
    if (other.operation === entry.operation && other.min_payload_bytes <= entry.max_payload_bytes && entry.min_payload_bytes <= other.max_payload_bytes) {
      throw invalid(`${OPERATION_DEBUG[entry.operation]} ranges ${entry.min_payload_bytes}..=${entry.max_payload_bytes} and ${other.min_payload_bytes}..=${other.max_payload_bytes} overlap`);
    }
  }
}

/** How far a probed link may be from the profile's measurement of it and still be the same link (the reference's tolerance). */
const PROBE_TOLERANCE = 4;

/**
 * A probed topology is measured anew by every job, in power-of-four buckets that move with load;
 * where a profile was tuned on probed links (`detected_topology_links`), and this job's probe
 * found the same links within 4x on every metric, the job takes the profile's links instead (the
 * reference "pins" them), so its fingerprint is the profile's. Every rank probes the identical
 * topology and reads the same file, so every rank decides alike. Returns the links to adopt, or
 * null (no detected links, or a link more than 4x away, present on one side only).
 */
export function pinnedTopology(value: unknown, probed: CollectiveTopology): CollectiveTopology | null {
  if (!isRecord(value) || typeof value.detected_topology_links !== 'string') return null;
  let detected: CollectiveTopology;
  try {
    detected = parseTopologyLinks(probed.worldSize, value.detected_topology_links);
  } catch {
    return null;
  }
  const near = (first: number, second: number) => first <= second * PROBE_TOLERANCE && second <= first * PROBE_TOLERANCE;
  for (let source = 0; source < probed.worldSize; source++) {
    for (let destination = 0; destination < probed.worldSize; destination++) {
      if (source === destination) continue;
      const mine = probed.link(source, destination);
      const theirs = detected.link(source, destination);
      if ((mine === undefined) !== (theirs === undefined)) return null;
      if (mine !== undefined && theirs !== undefined && !(near(mine.bandwidthMbps, theirs.bandwidthMbps) && near(mine.latencyNs, theirs.latencyNs))) return null;
    }
  }
  return detected.withRailLinks(probed.rails, probed.railLinks, probed.aggregateLinks);
}

/** The profile's entry for a call of `collective` at `bytes`, if it has one (the first that covers it). */
export function profileEntry(profile: AutotuneProfile, collective: string, bytes: number): AutotuneEntry | undefined {
  return profile.entries.find((entry) => PROFILE_OPERATIONS[entry.operation] === collective && entry.min_payload_bytes <= bytes && bytes <= entry.max_payload_bytes);
}

/** One decided cell of `rxccl tune`: an operation at this rank's input size, the algorithm chosen there and its median time. */
export interface TuneChoice {
  readonly operation: ProfileOperation;
  /** This rank's input in bytes (what `plan` and the profile's ranges count). */
  readonly bytes: number;
  /** The row chosen (`staged` is the profile's `direct`): see tune-decision.ts. */
  readonly algorithm: string;
  readonly timeNs: number;
}

/**
 * The profile of the choices (one per operation and size): each size's entry covering the sizes
 * nearer to it than to its measured neighbours (geometric midpoints; the smallest from 0, the
 * largest up to itself: beyond what was measured the table decides).
 */
export function buildAutotuneProfile(
  choices: readonly TuneChoice[],
  job: {
    readonly worldSize: number;
    readonly ringChannels: number;
    readonly fingerprints: { readonly topology: string; readonly execution: string };
    /** The links the job probed, where it did (GX1_TOPOLOGY_LINKS=probe). */
    readonly detectedLinks?: string | null;
  },
): AutotuneProfile {
  const entries: AutotuneEntry[] = [];
  for (const operation of Object.keys(PROFILE_OPERATIONS) as ProfileOperation[]) {
    const chosen = new Map<number, TuneChoice>();
    for (const choice of choices) {
      if (choice.operation !== operation) continue;
      if (chosen.has(choice.bytes)) throw new ConfigurationError(`two choices for ${operation} at ${choice.bytes} bytes: decide one per size first (decideAlgorithm)`);
      chosen.set(choice.bytes, choice);
    }
    const sizes = [...chosen.keys()].sort((a, b) => a - b);
    sizes.forEach((bytes, index) => {
      const { algorithm, timeNs } = chosen.get(bytes)!;
      const next = sizes[index + 1];
      const from = index === 0 ? 0 : entries.at(-1)!.max_payload_bytes + 1;
      const to = next === undefined ? bytes : Math.max(bytes, Math.floor(Math.sqrt(bytes * next)));
      entries.push({
        operation,
        min_payload_bytes: from,
        max_payload_bytes: to,
        algorithm: algorithm === 'staged' ? 'direct' : algorithm,
        ring_channels: job.ringChannels,
        measured_time_ns: Math.max(1, Math.round(timeNs)),
      });
    });
  }
  return {
    version: AUTOTUNE_PROFILE_VERSION,
    world_size: job.worldSize,
    topology_fingerprint: job.fingerprints.topology,
    execution_fingerprint: job.fingerprints.execution,
    entries,
    detected_topology_links: job.detectedLinks ?? null,
  };
}
