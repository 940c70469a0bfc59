import { fnv1a64 } from './fnv1a.js';

/** Layout texts this process has hashed, by hash, so a descriptor can name its layout. */
const NAMED_LAYOUTS = new Map<bigint, string>();
const MAX_NAMED_LAYOUTS = 1024;

/**
 * FNV-1a, 64 bits, of a layout's UTF-8 text: its fingerprint in a collective's descriptor
 * (docs/protocol.md 9.6; not a security measure).
 */
export function layoutHash(layout: string): bigint {
  const hash = fnv1a64(Buffer.from(layout, 'utf8'));
  if (NAMED_LAYOUTS.size < MAX_NAMED_LAYOUTS) NAMED_LAYOUTS.set(hash, layout);
  return hash;
}

/** A layout hash as a person reads it: its text in quotes where this process knows it, else the number. */
export function layoutName(hash: bigint): string {
  const text = layoutText(hash);
  return text === undefined ? String(hash) : JSON.stringify(text);
}

/** The text this process hashed to `hash`, where it knows it. */
export function layoutText(hash: bigint): string | undefined {
  return hash === 0n ? undefined : NAMED_LAYOUTS.get(hash);
}
