import { Partitioners, type Admin, type PartitionMetadata } from 'kafkajs';

/*
 * Records are given explicit partitions, chosen with kafkajs's Java-compatible
 * murmur2 partitioner, so the publisher knows which partition each record went
 * to and can report every record's own offset (read-your-writes needs them).
 */
export class PartitionMap {
  /** per topic, the partition list the partitioner reads (only its length matters); made once, not per record */
  private readonly partitions = new Map<string, PartitionMetadata[]>();
  private readonly partitioner = Partitioners.DefaultPartitioner();

  constructor(private readonly admin: Admin) {}

  async load(topics: string[]): Promise<void> {
    const missing = topics.filter((t) => !this.partitions.has(t));
    if (missing.length === 0) return;
    const { topics: metadata } = await this.admin.fetchTopicMetadata({ topics: missing });
    for (const t of metadata) {
      this.partitions.set(
        t.name,
        Array.from({ length: t.partitions.length }, (_, partitionId) => ({
          partitionId,
          leader: 0,
          partitionErrorCode: 0,
          replicas: [0],
          isr: [0],
        })),
      );
    }
  }

  partitionFor(topic: string, key: string): number {
    const partitionMetadata = this.partitions.get(topic);
    if (partitionMetadata === undefined) throw new Error(`partition count of ${topic} not loaded`);
    return this.partitioner({ topic, partitionMetadata, message: { key, value: null } });
  }
}
