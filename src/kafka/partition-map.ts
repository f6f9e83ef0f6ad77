import type { Admin } from 'kafkajs';
import { partitionOfKey } from './murmur2';

/*
 * Records are given explicit partitions, chosen as the Java client's (and
 * kafkajs's) default partitioner chooses them for a key (murmur2.ts), so the
 * publisher knows which partition each record went to and can report every
 * record's own offset (read-your-writes needs them).
 */
export class PartitionMap {
  /** per topic, its number of partitions */
  private readonly partitions = new Map<string, number>();

  constructor(private readonly admin: Admin) {}

  async load(topics: string[]): Promise<void> {
    const missing = topics.filter((t) => !this.partitions.has(t));
    if (missing.length === 0) return;
    const { topics: metadata } = await this.admin.fetchTopicMetadata({ topics: missing });
    for (const t of metadata) this.partitions.set(t.name, t.partitions.length);
  }

  partitionFor(topic: string, key: string): number {
    const count = this.partitions.get(topic);
    if (count === undefined) throw new Error(`partition count of ${topic} not loaded`);
    return partitionOfKey(key, count);
  }
}
