import type { FrameHeader } from './header.js';

/**
 * What point-to-point matching keys on: a message's communicator (header bytes 80..87) above its
 * 64-bit tag, as one bigint. The links take and match keys, so every communicator has the whole
 * tag space to itself on the job's connections, and the world (communicator 0) keys are its tags.
 */
export type MessageKey = bigint;

const TAG_BITS = 64n;
const TAG_MASK = (1n << TAG_BITS) - 1n;

/** The key of `tag` on `communicator` (0: the world, where the key is the tag itself). */
export function messageKey(communicator: bigint, tag: bigint): MessageKey {
  return communicator === 0n ? tag : (communicator << TAG_BITS) | tag;
}

/** The header fields a key travels in. */
export function keyFields(key: MessageKey): { readonly communicator: bigint; readonly tag: bigint } {
  return { communicator: key >> TAG_BITS, tag: key & TAG_MASK };
}

/** The key a received header carries. */
export function headerKey(header: Pick<FrameHeader, 'communicator' | 'tag'>): MessageKey {
  return messageKey(header.communicator, header.tag);
}

/** A key as errors name it: `tag 7`, or `tag 7 on communicator 0x8f3a5c0b2e7d4a19`. */
export function keyText(key: MessageKey): string {
  const { communicator, tag } = keyFields(key);
  return communicator === 0n ? `tag ${tag}` : `tag ${tag} on communicator ${communicatorText(communicator)}`;
}

/** A communicator id as people read it: 16 hex digits. */
export function communicatorText(communicator: bigint): string {
  return `0x${communicator.toString(16).padStart(16, '0')}`;
}

/** Keys as an error lists them: `tags 2, 3`, each of another communicator with its id (`tags 2, 7 on communicator 0x...`). */
export function keysText(keys: readonly MessageKey[]): string {
  return `tags ${keys.map((key) => keyText(key).slice('tag '.length)).join(', ')}`;
}
