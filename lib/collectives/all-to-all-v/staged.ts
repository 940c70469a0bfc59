import { map, type Observable } from 'rxjs';
import { FLAG_COUNTS_PREFIX } from '../../protocol/constants.js';
import { encodeCounts, readCountsPrefix } from '../../protocol/counts.js';
import { Opcode } from '../../protocol/opcode.js';
import type { Links } from '../../transport/links/links.js';
import type { AllToAllVRequest, CollectiveContext, CountedBytes } from '../algorithm.js';
import { shaped, stagedPayload } from '../staged.js';

/** All-to-all-v through the coordinator: the counts travel as a prefix of the payload both ways. */
export function stagedAllToAllV(_links: Links, request: AllToAllVRequest, context: CollectiveContext): Observable<CountedBytes> {
  const fields = shaped(Opcode.AllToAllV, request.view, { flags: FLAG_COUNTS_PREFIX });
  return stagedPayload(context, fields, [encodeCounts(request.sendCounts), request.view.bytes]).pipe(
    map((payload) => {
      const { counts, data } = readCountsPrefix(payload, context.worldSize);
      return { bytes: data, counts };
    }),
  );
}
