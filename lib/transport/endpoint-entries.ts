import { ProtocolError } from '../errors.js';
import { FLAG_PAYLOAD } from '../protocol/constants.js';
import { ElementType } from '../protocol/element-type.js';
import { type Frame, makeFrame } from '../protocol/frame.js';
import { Opcode } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import { formatEndpointTable, type RankEndpoints, readEndpointTable } from './peer-endpoint-config.js';

/**
 * A **run** of endpoint entries (docs/protocol.md 8.3, revision 14): the entries of ranks `first`,
 * `first + 1`, ... (modulo W), as a PeerEndpoint frame whose rootRank is `first` and whose payload
 * is those ranks' lines in the table's layout (one line per rank, or one per rail where some rank
 * of the run has several endpoints). The coordinator answers a rank's publication with the run of
 * its own entry and its ring successor's; a rank answers a partner of the endpoint gather with the
 * run after itself.
 */

/** The job a run belongs to. */
export interface EntriesJob {
  readonly uniqueId: UniqueId;
  readonly worldSize: number;
  readonly rails: number;
}

/** Who sends a run to whom, and which ranks it lists. */
export interface EntriesRun {
  /** The sender: 0 for the coordinator, else the rank answering. */
  readonly source: number;
  readonly destination: number;
  readonly first: number;
}

export function endpointEntriesFrame(job: EntriesJob, run: EntriesRun, entries: readonly RankEndpoints[]): Frame {
  const payload = new Uint8Array(Buffer.from(formatEndpointTable(entries), 'utf8'));
  return makeFrame(
    {
      uniqueId: job.uniqueId,
      opcode: Opcode.PeerEndpoint,
      elementType: ElementType.U8,
      sourceRank: run.source,
      destinationRank: run.destination,
      rootRank: run.first,
      worldSize: job.worldSize,
      tag: BigInt(job.rails),
      elementCount: payload.length,
    },
    payload,
  );
}

/**
 * Reads the run `run` names, of `count` entries, checking every header field; anything else is
 * a ProtocolError saying which field (`from` names the sender in it).
 */
export function readEndpointEntries(frame: Frame, job: EntriesJob, run: EntriesRun & { readonly count: number }, from: string): RankEndpoints[] {
  const h = frame.header;
  const wrong = (what: string): ProtocolError => new ProtocolError(`${from} sent an invalid run of direct peer endpoints: ${what}`);
  if (h.opcode !== Opcode.PeerEndpoint) throw wrong(`opcode ${h.opcode}, expected ${Opcode.PeerEndpoint} (PeerEndpoint)`);
  if (h.elementType !== ElementType.U8 || h.flags !== FLAG_PAYLOAD || h.elementCount !== frame.payload.length) {
    throw wrong(`element type ${h.elementType}, flags 0x${h.flags.toString(16)}, element count ${h.elementCount} for ${frame.payload.length} payload bytes (expected U8 text with flags PAYLOAD)`);
  }
  if (!h.uniqueId.equals(job.uniqueId)) throw wrong('it belongs to another session (unique id mismatch)');
  if (h.worldSize !== job.worldSize) throw wrong(`world size ${h.worldSize}, expected ${job.worldSize}`);
  if (h.sourceRank !== run.source || h.destinationRank !== run.destination) {
    throw wrong(`source ${h.sourceRank} and destination ${h.destinationRank}, expected ${run.source} and ${run.destination}`);
  }
  if (h.rootRank !== run.first) throw wrong(`its first rank is ${h.rootRank}, expected ${run.first}`);
  if (h.sequence !== 0n || h.tag !== BigInt(job.rails)) throw wrong(`sequence ${h.sequence} and tag ${h.tag}, expected 0 and ${job.rails} (the rail count)`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(frame.payload);
  } catch {
    throw wrong('its payload is not UTF-8');
  }
  let table;
  try {
    table = readEndpointTable(text, run.count, job.rails);
  } catch (error) {
    throw wrong(`ranks ${run.first}.. (${run.count}): ${(error as Error).message}`);
  }
  return table.endpoints.map((endpoints, index) => {
    const choice = table.choices[index];
    return { endpoints, dataPlane: table.dataPlanes[index]!, ...(choice === undefined ? {} : { choice }) };
  });
}
