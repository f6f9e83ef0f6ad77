import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { murmur2, partitionOfKey } from '../../src/kafka/murmur2';

/*
 * The publisher picks every record's partition itself (so it knows each record's offset), and must pick the one
 * kafkajs's and the Java client's default partitioner pick for the key: clients that produce task requests keyed by
 * task id, and readers that look a key up by its partition, rely on it.
 */
const kafkajsPartition = (key: string, partitions: number): number => {
  const partitionMetadata: PartitionMetadata[] = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));
  return Partitioners.DefaultPartitioner()({ topic: 't', partitionMetadata, message: { key, value: null } });
};

describe('partitionOfKey', () => {
  // Every key length mod 4 (the hash's tail), UTF-8 of several widths, and keys longer than the scratch buffer.
  const keys = [
    '',
    'a',
    'ab',
    'abc',
    'abcd',
    '3f1c9a6e-5b2d-4c8e-9f7a-1d2e3f4a5b6c',
    'cancel/3f1c9a6e-5b2d-4c8e-9f7a-1d2e3f4a5b6c',
    '!claim/acme/8e03978e-40d5-43e8-bc93-6894a57f9324',
    'orders/0192b3c4-d5e6-7f80-9a1b-2c3d4e5f6a7b',
    'Grüße, 世界 🎉',
    '\ud800 lone surrogate',
    'x'.repeat(400),
    'é'.repeat(700),
    ...Array.from({ length: 500 }, (_, i) => `task-${i}-${(i * 2654435761) % 1000003}`),
  ];

  it.each([1, 3, 6, 7, 50])('puts every key where kafkajs puts it, %i partitions', (partitions) => {
    for (const key of keys)
      expect([key, partitionOfKey(key, partitions)]).toEqual([key, kafkajsPartition(key, partitions)]);
  });

  it("matches the Java client's murmur2 for known keys", () => {
    // Values of org.apache.kafka.common.utils.Utils.murmur2 for these UTF-8 strings.
    expect(murmur2('21')).toBe(-973932308);
    expect(murmur2('foobar')).toBe(-790332482);
    expect(murmur2('a-little-bit-long-string')).toBe(-985981536);
    expect(murmur2('a-little-bit-longer-string')).toBe(-1486304829);
    expect(murmur2('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8')).toBe(-58897971);
  });
});
