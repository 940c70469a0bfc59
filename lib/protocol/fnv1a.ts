/** FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3), of `bytes`: the reference's hash for layouts, probe tags and fingerprints. */
export function fnv1a64(bytes: Uint8Array): bigint {
  let hash = 0xcbf2_9ce4_8422_2325n;
  for (const byte of bytes) hash = ((hash ^ BigInt(byte)) * 0x0000_0100_0000_01b3n) & 0xffff_ffff_ffff_ffffn;
  return hash;
}

/** FNV-1a 64 of `values`, each as 8 little-endian bytes (the reference's `fingerprint_u64` sequence). */
export function fnv1a64OfU64s(values: readonly (number | bigint)[]): bigint {
  const bytes = new Uint8Array(values.length * 8);
  const view = new DataView(bytes.buffer);
  values.forEach((value, index) => view.setBigUint64(index * 8, BigInt(value), true));
  return fnv1a64(bytes);
}
