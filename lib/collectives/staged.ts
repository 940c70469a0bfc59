import { map, type Observable, tap } from 'rxjs';
import { ConfigurationError, ProtocolError } from '../errors.js';
import { scheduleReduce } from '../kernels/index.js';
import { MAX_FRAME_PAYLOAD_BYTES } from '../protocol/constants.js';
import { opcodeName, type Opcode } from '../protocol/opcode.js';
import type { TensorView } from '../tensor.js';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import type { CollectiveContext, ReductionRequest } from './algorithm.js';

/**
 * The building blocks of the staged algorithms (the reference design's tcp_host_staged data path):
 * every rank sends its data with the request, the coordinator validates and routes it, and the
 * response carries what this rank needs. Reductions run here, rank-side, in the GX kernels.
 */

/** What a collective adds to a tensor's shape in its request. */
export type RequestExtras = Pick<CollectiveRequest, 'reduceOp' | 'rootRank' | 'flags' | 'tag'>;

const NO_EXTRAS: RequestExtras = {};

/**
 * The request fields that describe a tensor. One literal of one shape (no `...extra` spread): every
 * collective builds one, and a spread of varying shapes costs microseconds.
 */
export function shaped(opcode: Opcode, view: TensorView, extra: RequestExtras = NO_EXTRAS): CollectiveRequest {
  return { opcode, elementType: view.elementType, elementCount: view.count, reduceOp: extra.reduceOp, rootRank: extra.rootRank, flags: extra.flags, tag: extra.tag };
}

/**
 * For collectives the coordinator answers with every rank's data in one frame: refuses, before
 * anything is sent, a tensor whose response would pass the frame limit.
 */
export function checkGatheredFits(opcode: Opcode, view: TensorView, worldSize: number): void {
  if (view.bytes.length * worldSize > MAX_FRAME_PAYLOAD_BYTES) {
    throw new ConfigurationError(
      `${opcodeName(opcode)} of ${view.bytes.length} bytes x world size ${worldSize} exceeds the frame limit ` +
        `MAX_FRAME_PAYLOAD_BYTES (${MAX_FRAME_PAYLOAD_BYTES}); split the tensor`,
    );
  }
}

/** The response payload of one staged exchange. */
export function stagedPayload(context: CollectiveContext, request: CollectiveRequest, parts: readonly Uint8Array[]): Observable<Uint8Array> {
  return context.coordinate(request, parts).pipe(map((response) => response.payload));
}

/**
 * The rank-side half of a staged reduction: the coordinator returned every rank's slice (all of
 * them, or this rank's shard of each) in scratch memory, and the kernel folds them into the
 * request's output (default a fresh buffer); the scratch is given back once the kernel is done,
 * and only then (a kernel on a worker may still read it after its caller gave up).
 */
export function reduceResponse(context: CollectiveContext, request: ReductionRequest, payload: Uint8Array): Observable<Uint8Array> {
  if (payload.length % context.worldSize !== 0) {
    context.scratch.give(payload);
    throw new ProtocolError(`reduction payload of ${payload.length} bytes does not split into ${context.worldSize} slices`);
  }
  return scheduleReduce({ dtype: request.view.dtype, op: request.op, input: payload, slices: context.worldSize, output: request.output }).pipe(
    tap({ complete: () => context.scratch.give(payload) }),
  );
}
