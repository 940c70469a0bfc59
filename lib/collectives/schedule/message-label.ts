import { HEADER_ONLY } from './header-exchange.js';
import type { ScheduledMessage } from './schedule.js';

/**
 * A message's label on the native plane's data links (docs/protocol.md 9.9, "Message labels"):
 * which of its collective's messages it is, by its step and channel (the JS plane's tags carry the
 * step's 12 bits and the channel's low 6; a label also the channel's next 8, so that the
 * hierarchical schedules' channels, one per share, name up to 16384 shares) and which stripe of it
 * (rails), in its header's bytes 28..31:
 * `step & 0xfff | (channel & 0x3f) << 12 | stripe << 18 | (channel >> 6 & 0xff) << 24`. Its
 * receiver compares it with the label of the message its own schedule expects next on that link,
 * so a message sent in another order (another part, another step) is named instead of being folded
 * in the wrong place.
 */
export function messageLabel(message: Pick<ScheduledMessage, 'step' | 'channel' | 'stripe'>): number {
  const { step, channel, stripe = 0 } = message;
  return ((step & 0xfff) | ((channel & 0x3f) << 12) | ((stripe & 0x3f) << 18) | (((channel >>> 6) & 0xff) << 24)) >>> 0;
}

/** A label as a person reads it: `step 2 channel 1 stripe 0`. */
export function labelText(label: number): string {
  return `step ${label & 0xfff} channel ${((label >>> 12) & 0x3f) | ((label >>> 24) << 6)} stripe ${(label >>> 18) & 0x3f}`;
}

/** The label of the ring agreement's header-only messages (docs/protocol.md 9.9). */
const HEADER_ONLY_LABEL = messageLabel(HEADER_ONLY);

/** A message by its label, as an error names it: `message step 2 channel 1 stripe 0`, or `its header alone` (the ring agreement's). */
export function messageText(label: number): string {
  return label === HEADER_ONLY_LABEL ? 'its header alone' : `message ${labelText(label)}`;
}

/** Where a data link header carries its message's label, u32 little-endian (native/schedule_program.h kLabelOffset). */
export const LABEL_OFFSET = 28;

/** The label a data link header carries. */
export function headerLabel(header: Uint8Array): number {
  return new DataView(header.buffer, header.byteOffset, header.byteLength).getUint32(LABEL_OFFSET, true);
}

/** A copy of a collective's data link header with `label` in place. */
export function labelledHeader(header: Uint8Array, label: number): Uint8Array {
  const labelled = Uint8Array.from(header);
  new DataView(labelled.buffer).setUint32(LABEL_OFFSET, label, true);
  return labelled;
}
