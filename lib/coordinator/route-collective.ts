import { ConfigurationError, WrongSessionError } from '../errors.js';
import type { CollectiveAgreement } from '../protocol/agreement.js';
import { ANY_RANK, FLAG_COUNTS_PREFIX, FLAG_PEER_DATA } from '../protocol/constants.js';
import { encodeCounts, readCountsPrefix } from '../protocol/counts.js';
import { ElementType, elementWidth } from '../protocol/element-type.js';
import { makeHeader, type Frame } from '../protocol/frame.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import type { OutgoingFrame } from '../transport/frame-channel.js';

/**
 * The coordinator's collective routing for one sequence (the reference design's
 * `validate_and_route`): checks that every rank submitted the same operation, that each payload
 * has the size its operation requires, and builds each rank's response. Responses are built from
 * views of the request payloads, never copies: an all-gather writes the same request buffers to
 * every rank. Reductions are not done here; ranks reduce what they receive.
 */
export function routeCollective(
  agreement: CollectiveAgreement,
  uniqueId: UniqueId,
  sequence: bigint,
  requests: readonly Frame[],
): OutgoingFrame[] {
  const worldSize = requests.length;
  const first = requests[0]!.header;
  // A scatter's non-root ranks may declare no element type: they take whatever the root sends.
  const scatterRoot = first.opcode === Opcode.Scatter && first.rootRank < worldSize ? requests[first.rootRank]!.header : null;
  requests.forEach((request, rank) => {
    const header = request.header;
    if (!header.uniqueId.equals(uniqueId)) throw new WrongSessionError();
    if (header.sourceRank !== rank || header.worldSize !== worldSize) {
      throw new ConfigurationError(
        `connection rank ${rank} submitted source rank ${header.sourceRank} and world size ${header.worldSize}`,
      );
    }
    const variable = header.opcode === Opcode.AllToAllV;
    const inherits = scatterRoot !== null && header.opcode === Opcode.Scatter && header.elementType === ElementType.None;
    agreement.submit(rank, header.sequence, {
      opcode: header.opcode,
      elementType: inherits ? scatterRoot.elementType : header.elementType,
      rootRank: header.rootRank,
      elementCount: variable ? 0 : inherits ? scatterRoot.elementCount : header.elementCount,
      reduceOp: header.reduceOp,
      layoutHash: variable ? 0n : header.tag,
    });
  });
  const viaMesh = requests.map((request) => (request.header.flags & FLAG_PEER_DATA) !== 0);
  if (viaMesh.some(Boolean)) return agreeOnly(viaMesh, sequence, (rank) => response(uniqueId, first.opcode, ElementType.None, sequence, rank, worldSize, 0, []));
  const shape = scatterRoot ?? first;
  const count = shape.elementCount;
  const width = elementWidth(shape.elementType);
  const rankBytes = count * width;
  const respond = (destination: number, elementCount: number, parts: Uint8Array[], elementType = shape.elementType) =>
    response(uniqueId, first.opcode, elementType, sequence, destination, worldSize, elementCount, parts);
  // A loop, not `Array.from({ length })`: that generic path cost microseconds per collective.
  const everyRank = <T>(build: (rank: number) => T): T[] => {
    const built: T[] = [];
    for (let rank = 0; rank < worldSize; rank++) built.push(build(rank));
    return built;
  };
  const payloads = requests.map((request) => request.payload);

  switch (first.opcode) {
    case Opcode.Barrier:
      return routeEmpty(requests, (rank) => respond(rank, 0, [], ElementType.None));
    case Opcode.SetTimeout:
      if (first.elementType !== ElementType.None || first.rootRank !== ANY_RANK || first.tag === 0n) {
        throw new ConfigurationError('SET_TIMEOUT requires an empty control frame and non-zero millisecond tag');
      }
      return routeEmpty(requests, (rank) => respond(rank, 0, [], ElementType.None));
    case Opcode.Broadcast: {
      const root = requiredRoot(first.rootRank, worldSize);
      requireOnlyRootPayload(requests, root, rankBytes);
      return everyRank((rank) => respond(rank, count, [payloads[root]!]));
    }
    case Opcode.AllGather:
    case Opcode.AllReduce:
      requireAllPayloads(requests, rankBytes);
      return everyRank((rank) => respond(rank, count * worldSize, payloads));
    case Opcode.Gather:
    case Opcode.Reduce: {
      const root = requiredRoot(first.rootRank, worldSize);
      requireAllPayloads(requests, rankBytes);
      return everyRank((rank) =>
        rank === root ? respond(rank, count * worldSize, payloads) : respond(rank, 0, [], ElementType.None),
      );
    }
    case Opcode.Scatter: {
      const root = requiredRoot(first.rootRank, worldSize);
      requireOnlyRootPayload(requests, root, rankBytes);
      const shard = divisibleShard(count, worldSize, 'scatter total element count is not divisible by world size');
      const shardBytes = shard * width;
      return everyRank((rank) => respond(rank, shard, [payloads[root]!.subarray(rank * shardBytes, (rank + 1) * shardBytes)]));
    }
    case Opcode.ReduceScatter:
    case Opcode.AllToAll: {
      requireAllPayloads(requests, rankBytes);
      const what = first.opcode === Opcode.ReduceScatter ? 'reduce-scatter' : 'all-to-all';
      const shard = divisibleShard(count, worldSize, `${what} count is not divisible by world size`);
      const shardBytes = shard * width;
      // Destination d receives shard d of every rank, in rank order.
      return everyRank((destination) =>
        respond(
          destination,
          shard * worldSize,
          payloads.map((payload) => payload.subarray(destination * shardBytes, (destination + 1) * shardBytes)),
        ),
      );
    }
    case Opcode.AllToAllV:
      return routeAllToAllV(requests, uniqueId, sequence, first.elementType);
    default:
      throw new ConfigurationError(`opcode ${opcodeName(first.opcode)} is not a coordinator collective request`);
  }
}

function response(
  uniqueId: UniqueId,
  opcode: Opcode,
  elementType: ElementType,
  sequence: bigint,
  destination: number,
  worldSize: number,
  elementCount: number,
  parts: Uint8Array[],
  flags = 0,
): OutgoingFrame {
  const payloadBytes = parts.reduce((total, part) => total + part.length, 0);
  const fields = { uniqueId, opcode, elementType, sequence, destinationRank: destination, worldSize, elementCount, flags };
  return { header: makeHeader(fields, payloadBytes), parts };
}

/**
 * A collective whose data travels over the direct peer mesh (flag PEER_DATA, tcp_peer): the
 * coordinator has checked the agreement and answers every rank with an empty frame, which is the
 * ranks' go-ahead. Every rank must say so, or they would wait on each other on different planes.
 */
function agreeOnly(viaMesh: boolean[], sequence: bigint, build: (rank: number) => OutgoingFrame): OutgoingFrame[] {
  if (!viaMesh.every(Boolean)) {
    const ranks = (value: boolean) => viaMesh.flatMap((flag, rank) => (flag === value ? [rank] : []));
    throw new ConfigurationError(
      `collective sequence ${sequence}: ranks [${ranks(true).join(',')}] move its data over the peer mesh, ranks [${ranks(false).join(',')}] through the coordinator`,
    );
  }
  return viaMesh.map((_, rank) => build(rank));
}

function routeEmpty(requests: readonly Frame[], build: (rank: number) => OutgoingFrame): OutgoingFrame[] {
  const carrying = requests.findIndex((request) => request.payload.length > 0);
  if (carrying >= 0) {
    throw new ConfigurationError(`${opcodeName(requests[0]!.header.opcode)} cannot carry a payload (rank ${carrying} sent ${requests[carrying]!.payload.length} bytes)`);
  }
  return requests.map((_, rank) => build(rank));
}

function requiredRoot(root: number, worldSize: number): number {
  if (root === ANY_RANK || root >= worldSize) throw new ConfigurationError('rooted collective requires a valid root rank');
  return root;
}

function divisibleShard(count: number, worldSize: number, message: string): number {
  if (count % worldSize !== 0) throw new ConfigurationError(message);
  return count / worldSize;
}

function requireAllPayloads(requests: readonly Frame[], bytes: number): void {
  requests.forEach((request, rank) => {
    if (request.payload.length !== bytes) {
      throw new ConfigurationError(`rank ${rank} payload has ${request.payload.length} bytes, expected ${bytes}`);
    }
  });
}

function requireOnlyRootPayload(requests: readonly Frame[], root: number, bytes: number): void {
  requests.forEach((request, rank) => {
    const expected = rank === root ? bytes : 0;
    if (request.payload.length !== expected) {
      throw new ConfigurationError(`rank ${rank} payload has ${request.payload.length} bytes, expected ${expected}`);
    }
  });
}

function routeAllToAllV(
  requests: readonly Frame[],
  uniqueId: UniqueId,
  sequence: bigint,
  elementType: ElementType,
): OutgoingFrame[] {
  const width = elementWidth(elementType);
  if (elementType === ElementType.None) throw new ConfigurationError('all-to-all-v requires a concrete element type');
  const worldSize = requests.length;
  const rows = requests.map((request, rank) => {
    if ((request.header.flags & FLAG_COUNTS_PREFIX) === 0) {
      throw new ConfigurationError(`all-to-all-v frame of rank ${rank} is missing its counts prefix`);
    }
    const row = readCountsPrefix(request.payload, worldSize);
    if (row.total !== request.header.elementCount) {
      throw new ConfigurationError(`all-to-all-v counts of rank ${rank} sum to ${row.total}, header declares ${request.header.elementCount}`);
    }
    if (row.data.length !== row.total * width) {
      throw new ConfigurationError(`all-to-all-v data of rank ${rank} has ${row.data.length} bytes, expected ${row.total * width}`);
    }
    const offsets: number[] = [];
    let offset = 0;
    for (const rowCount of row.counts) {
      offsets.push(offset);
      offset += rowCount * width;
    }
    return { ...row, offsets };
  });
  return requests.map((_, destination) => {
    const receiveCounts = rows.map((row) => row.counts[destination]!);
    const total = receiveCounts.reduce((sum, value) => sum + value, 0);
    const parts = [
      encodeCounts(receiveCounts),
      ...rows.map((row) => row.data.subarray(row.offsets[destination]!, row.offsets[destination]! + row.counts[destination]! * width)),
    ];
    return response(uniqueId, Opcode.AllToAllV, elementType, sequence, destination, worldSize, total, parts, FLAG_COUNTS_PREFIX);
  });
}
