import type { RootedRequest } from '../algorithm.js';

/**
 * Where a broadcast on the mesh leaves its result: `request.output` (the tensor itself when in
 * place), else fresh memory; the root's holds its tensor from the start, since it sends from there.
 */
export function broadcastResult(request: RootedRequest, rank: number): Uint8Array {
  const { view, root } = request;
  const result = request.output ?? new Uint8Array(view.bytes.length);
  if (rank === root && result !== view.bytes) result.set(view.bytes);
  return result;
}
