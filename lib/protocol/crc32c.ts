/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum that closes every GX1
 * header: it only ever covers the 92 header bytes before it, twice per message (encode and
 * decode), so it is sliced by four (four bytes per step, 2-3x the bytewise loop).
 */
const TABLES = (() => {
  const tables = Array.from({ length: 4 }, () => new Uint32Array(256));
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
    tables[0]![byte] = crc >>> 0;
  }
  // Table k is a byte followed by k zero bytes.
  for (let byte = 0; byte < 256; byte++) {
    for (let k = 1; k < 4; k++) tables[k]![byte] = (tables[k - 1]![byte]! >>> 8) ^ tables[0]![tables[k - 1]![byte]! & 0xff]!;
  }
  return tables;
})();
const [T0, T1, T2, T3] = TABLES as [Uint32Array, Uint32Array, Uint32Array, Uint32Array];

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
