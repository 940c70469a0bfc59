import { map, type Observable } from 'rxjs';
import { ConfigurationError } from '../../errors.js';
import { dtypeOfElementType } from '../../protocol/element-type.js';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { CollectiveContext, ScatterRequest, TypedBytes } from '../algorithm.js';
import { shaped } from '../staged.js';

/**
 * Scatter through the coordinator: the root sends every shard up, each rank gets its own. A rank
 * that passed null declared no shape: it takes the root's type and checks the root's count.
 */
export function stagedScatter(_links: Links, request: ScatterRequest, context: CollectiveContext): Observable<TypedBytes> {
  const { view, root, countPerRank } = request;
  const fields = view === null ? { opcode: Opcode.Scatter, rootRank: root } : shaped(Opcode.Scatter, view, { rootRank: root });
  return context.coordinate(fields, context.rank === root ? [view!.bytes] : []).pipe(
    map((response) => {
      if (view !== null) return { dtype: view.dtype, bytes: response.payload };
      if (response.header.elementCount !== countPerRank) {
        throw new ConfigurationError(
          `scatter root rank ${root} sent ${response.header.elementCount} elements per rank, rank ${context.rank} expected countPerRank ${countPerRank}`,
        );
      }
      return { dtype: dtypeOfElementType(response.header.elementType), bytes: response.payload };
    }),
  );
}
