const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const scratch = Buffer.allocUnsafe(1024);

/**
 * The Java client's murmur2 of a key's UTF-8 bytes, the hash its default partitioner (and kafkajs's) places keyed
 * records by. In 32-bit integer arithmetic, as Java computes it: kafkajs's own copy multiplies 64-bit Long objects,
 * which cost as much per accepted task as the rest of its record encoding.
 */
export function murmur2(key: string): number {
  const data = key.length * 3 <= scratch.length ? scratch : Buffer.from(key);
  const length = data === scratch ? scratch.write(key) : data.length;
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & 3;
  if (tail > 0) {
    if (tail === 3) h ^= data[whole + 2] << 16;
    if (tail >= 2) h ^= data[whole + 1] << 8;
    h ^= data[whole];
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition the Java client's default partitioner (and kafkajs's) puts a record with this key in. */
export function partitionOfKey(key: string, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions;
}
