/**
 * The workload every engine gets, byte for byte: N distinct 8-byte keys in hash order (like Petrel's URL
 * hashes, which are raw xxHash64 values: random with respect to insertion order) and a 100-byte value
 * per key, plus the random order of the look-ups. All generated before any timing starts.
 *
 * Key i: fmix32(i) || fmix32(i ^ 0x5bd1e995), big-endian. fmix32 (MurmurHash3's finalizer) is a
 * bijection on 32 bits, so the first four bytes alone make the keys distinct for N < 2^32.
 * Value i: the key, then bytes (i * 7 + j) & 0xff, so a look-up can check it got the right value.
 */

export const KEY_BYTES = 8;
export const VALUE_BYTES = 100;

function fmix32(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Keys and values as two large buffers (key i at i * 8, value i at i * 100) and views into them. */
export function makeWorkload(n) {
  const keyBytes = Buffer.alloc(n * KEY_BYTES);
  const valueBytes = Buffer.alloc(n * VALUE_BYTES);
  const keys = new Array(n);
  const values = new Array(n);
  for (let i = 0; i < n; i++) {
    keyBytes.writeUInt32BE(fmix32(i), i * KEY_BYTES);
    keyBytes.writeUInt32BE(fmix32((i ^ 0x5bd1e995) >>> 0), i * KEY_BYTES + 4);
    const key = keyBytes.subarray(i * KEY_BYTES, (i + 1) * KEY_BYTES);
    const value = valueBytes.subarray(i * VALUE_BYTES, (i + 1) * VALUE_BYTES);
    key.copy(value, 0);
    for (let j = KEY_BYTES; j < VALUE_BYTES; j++) value[j] = (i * 7 + j) & 0xff;
    keys[i] = key;
    values[i] = value;
  }
  return { keys, values };
}

/** A random permutation of 0..n-1 (Fisher-Yates with a fixed-seed xorshift), the order of the look-ups. */
export function lookupOrder(n, seed = 0x2545f491) {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  let s = seed >>> 0 || 1;
  for (let i = n - 1; i > 0; i--) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    const j = s % (i + 1);
    const t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  return order;
}

/** True when `value` is the value stored for key i. */
export function valueMatches(value, i, key) {
  return (
    value != null &&
    value.length === VALUE_BYTES &&
    value[0] === key[0] &&
    value[7] === key[7] &&
    value[VALUE_BYTES - 1] === ((i * 7 + VALUE_BYTES - 1) & 0xff)
  );
}
