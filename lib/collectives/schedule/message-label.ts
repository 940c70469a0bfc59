import type { ScheduledMessage } from './schedule.js';

/**
 * A message's label on the native plane's data links (docs/protocol.md 9.9, "Message labels"):
 * which of its collective's messages it is, as the JS plane's tags say it (step and channel, the
 * same 12 and 6 bits) and which stripe of it (rails), in its header's bytes 28..31:
 * `step & 0xfff | (channel & 0x3f) << 12 | stripe << 18`. Its receiver compares it with the label
 * of the message its own schedule expects next on that link, so a message sent in another order
 * (another part, another step) is named instead of being folded in the wrong place.
 */
export function messageLabel(message: Pick<ScheduledMessage, 'step' | 'channel' | 'stripe'>): number {
  return (message.step & 0xfff) | ((message.channel & 0x3f) << 12) | ((message.stripe ?? 0) << 18);
}

/** A label as a person reads it: `step 2 channel 1 stripe 0`. */
export function labelText(label: number): string {
  return `step ${label & 0xfff} channel ${(label >>> 12) & 0x3f} stripe ${label >>> 18}`;
}

/** Where a data link header carries its message's label, u32 little-endian (native/data_plane.h kLabelOffset). */
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
