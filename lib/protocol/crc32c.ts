/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum that closes every GX1
 * header: it only ever covers the 92 header bytes before it, twice per message (encode and
 * decode), so it is sliced by four (four bytes per step, rather than one).
 */
const T0 = new Uint32Array(256).map((_, byte) => {
  let crc = byte;
  for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  return crc;
});
/** The table of one more zero byte: table k is a byte followed by k zero bytes. */
const followedByZero = (table: Uint32Array) => table.map((crc) => (crc >>> 8) ^ T0[crc & 0xff]!);
const T1 = followedByZero(T0);
const T2 = followedByZero(T1);
const T3 = followedByZero(T2);

export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let crc = 0xffffffff;
  let index = start;
  for (; index + 4 <= end; index += 4) {
    crc ^= bytes[index]! | (bytes[index + 1]! << 8) | (bytes[index + 2]! << 16) | (bytes[index + 3]! << 24);
    crc = T3[crc & 0xff]! ^ T2[(crc >>> 8) & 0xff]! ^ T1[(crc >>> 16) & 0xff]! ^ T0[crc >>> 24]!;
  }
  for (; index < end; index++) crc = T0[(crc ^ bytes[index]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
