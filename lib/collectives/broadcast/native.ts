import { defer, type Observable } from 'rxjs';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { NativeExchange } from '../../transport/data-plane.js';
import type { CollectiveContext, RootedRequest } from '../algorithm.js';
import { byRank, dataPlaneOf, nativeCollective, runOnPlane } from '../native-collective.js';
import { shaped } from '../staged.js';
import { broadcastResult } from './broadcast-result.js';

/**
 * From this size (and 3 ranks) the broadcast is a chain; below it the root sends to every rank.
 * On one host every byte crosses loopback TCP once per receiving rank either way, but the sender
 * pays most of that (its copy and both ends' TCP work): the root sending W-1 copies alone is the
 * slowest rank, a chain spreads the sending over W-1 ranks. 4 ranks on 2 cores, alternated three
 * times: 64 MiB 76-82 -> 56-63 ms, 4 MiB 5.4-5.8 -> 4.7-5.3 ms; 1 MiB level within its noise.
 */
export const NATIVE_CHAIN_MIN_BYTES = 1 << 20;

/**
 * Broadcast on the native data plane, in one exchange. Small: the root sends its tensor to every
 * other rank at once. Large: along the chain root, root + 1, ... (mod W), each middle rank
 * relaying the bytes to the next as they arrive (`forwards`). Every rank receives straight into
 * its result; every other message is header only, so every pair of ranks still compares headers
 * (a rank in another collective, or with another root, is named).
 *
 * Emits the result in `request.output` (in place when that is the tensor itself), else in fresh
 * memory (the root's a copy of its tensor).
 */
export function nativeBroadcast(links: Links, request: RootedRequest, context: CollectiveContext): Observable<Uint8Array> {
  return defer(() => {
    const plane = dataPlaneOf(links);
    const { view, root } = request;
    const collective = nativeCollective(context, shaped(Opcode.Broadcast, view, { rootRank: root }));
    const result = broadcastResult(request, links.rank);
    const chain = links.worldSize >= 3 && view.bytes.length >= NATIVE_CHAIN_MIN_BYTES;
    const moves = chain ? chainMoves(links, root, view.bytes, result) : directMoves(links, root, view.bytes, result);
    return runOnPlane(context, collective, (call) => plane.exchange({ ...call, ...moves }), () => result);
  });
}

type Moves = Pick<NativeExchange, 'sends' | 'receives' | 'forwards'>;

function directMoves({ rank, worldSize }: Links, root: number, tensor: Uint8Array, result: Uint8Array): Moves {
  if (rank === root) return { sends: new Array<Uint8Array>(worldSize).fill(tensor), receives: [] };
  return { sends: [], receives: byRank(worldSize, root, result) };
}

function chainMoves({ rank, worldSize }: Links, root: number, tensor: Uint8Array, result: Uint8Array): Moves {
  const previous = (rank + worldSize - 1) % worldSize;
  const next = (rank + 1) % worldSize;
  if (rank === root) return { sends: byRank(worldSize, next, tensor), receives: [] };
  const receives = byRank(worldSize, previous, result);
  if (next === root) return { sends: [], receives };
  return { sends: byRank(worldSize, next, result), receives, forwards: byRank(worldSize, next, previous, -1) };
}
