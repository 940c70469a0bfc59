import { communicatorText, keyFields, type MessageKey } from '../protocol/message-key.js';
import { PAIRWISE_TAG_PREFIX } from './pairwise-family.js';
import { RING_TAG_PREFIX } from './ring-family.js';
import { HEADER_TAG_PREFIX } from './schedule/link-agreement.js';

/** The algorithm families whose pieces travel under tags of their own (peer-data.ts `pieceTag`). */
const FAMILIES = new Map<number, string>([
  [HEADER_TAG_PREFIX, 'header'],
  [PAIRWISE_TAG_PREFIX, 'pairwise'],
  [RING_TAG_PREFIX, 'ring'],
]);

/**
 * A tag as a person reads it: the number, and for a collective's own message what it is
 * (`tag 5207287069147136000 (header of collective 0, step 0, piece 0)`), so that a
 * counterexample or a timeout names the collective, not only a 64-bit number. A message of a
 * communicator (see lib/protocol/message-key.ts) says which.
 */
export function describeTag(key: MessageKey): string {
  const { communicator, tag } = keyFields(key);
  const described = describeWorldTag(tag);
  return communicator === 0n ? described : `${described} on communicator ${communicatorText(communicator)}`;
}

function describeWorldTag(tag: bigint): string {
  const family = FAMILIES.get(Number(tag >> 48n));
  if (family === undefined) return `tag ${tag}`;
  const field = (shift: bigint, mask: bigint) => Number((tag >> shift) & mask);
  const channel = field(24n, 0x3fn);
  return `tag ${tag} (${family} of collective ${field(30n, 0x3ffffn)}, ${channel === 0 ? '' : `channel ${channel}, `}step ${field(12n, 0xfffn)}, piece ${field(0n, 0xfffn)})`;
}
