import { Partitioners, type Admin, type PartitionMetadata } from 'kafkajs';

/*
 * Records are given explicit partitions, chosen with kafkajs's Java-compatible
 * murmur2 partitioner, so the publisher knows which partition each record went
 * to and can report every record's own offset (read-your-writes needs them).
 */
export class PartitionMap {
  private readonly counts = new Map<string, number>();
  private readonly partitioner = Partitioners.DefaultPartitioner();

  constructor(private readonly admin: Admin) {}

  async load(topics: string[]): Promise<void> {
    const missing = topics.filter((t) => !this.counts.has(t));
    if (missing.length === 0) return;
    const { topics: metadata } = await this.admin.fetchTopicMetadata({ topics: missing });
    for (const t of metadata) this.counts.set(t.name, t.partitions.length);
  }

  partitionFor(topic: string, key: string): number {
    const count = this.counts.get(topic);
    if (count === undefined) throw new Error(`partition count of ${topic} not loaded`);
    const partitionMetadata: PartitionMetadata[] = Array.from({ length: count }, (_, partitionId) => ({
      partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0],
    }));
    return this.partitioner({ topic, partitionMetadata, message: { key, value: null } });
  }
}
