/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of the search index's segments and manifest, and of format-1 B-Tree pages (btree/upgrade.ts reads them).
 *
 * Table-driven, slicing-by-8: eight 256-entry tables (8 KiB, built once at import) let the main loop
 * consume 8 bytes per step. Synchronous, no dependencies. Check value: crc32c("123456789") = 0xE3069283.
 */

const POLY = 0x82f63b78;

const TABLE: Uint32Array = (() => {
  const t = new Uint32Array(8 * 256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[i] = c >>> 0;
  }
  for (let i = 0; i < 256; i++) {
    for (let s = 1; s < 8; s++) {
      const prev = t[(s - 1) * 256 + i]!;
      t[s * 256 + i] = ((prev >>> 8) ^ t[prev & 0xff]!) >>> 0;
    }
  }
  return t;
})();

/**
 * CRC-32C of `bytes[start, end)`, as an unsigned 32-bit integer. Pass the CRC of the bytes before as
 * `previous` to continue a checksum over data that arrives in pieces (the search index's sections).
 */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length, previous = 0): number {
  const t = TABLE;
  let crc = (previous ^ 0xffffffff) >>> 0;
  let i = start;
  for (; end - i >= 8; i += 8) {
    const lo = crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    crc =
      t[7 * 256 + (lo & 0xff)]! ^
      t[6 * 256 + ((lo >>> 8) & 0xff)]! ^
      t[5 * 256 + ((lo >>> 16) & 0xff)]! ^
      t[4 * 256 + (lo >>> 24)]! ^
      t[3 * 256 + bytes[i + 4]!]! ^
      t[2 * 256 + bytes[i + 5]!]! ^
      t[256 + bytes[i + 6]!]! ^
      t[bytes[i + 7]!]!;
  }
  for (; i < end; i++) crc = t[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
