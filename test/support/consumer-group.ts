import { Kafka, logLevel } from 'kafkajs';
import { testBrokers } from './test-service';
import { committedRecords } from './topic-contents';
import { until } from './until';

/** Resolves once the consumer group is Stable with this many members: work sent before would go to the first alone. */
export async function untilGroupStable(groupId: string, members: number, timeoutMs = 60000): Promise<void> {
  const admin = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await until(
      async () => {
        const {
          groups: [group],
        } = await admin.describeGroups([groupId]);
        return group.state === 'Stable' && group.members.length === members ? true : undefined;
      },
      timeoutMs,
      200,
      `group ${groupId} Stable with ${members} members`,
    );
  } finally {
    await admin.disconnect();
  }
}

/**
 * Resolves once the consumer group has committed past every committed record the topic holds now (read as a
 * read_committed consumer reads it): each of them handled, whatever it led to. Not "past the partition's end", which a
 * transaction's closing marker puts one further than any record.
 */
export async function untilGroupCommitted(groupId: string, topic: string, timeoutMs = 60000): Promise<void> {
  const last = new Map<number, bigint>();
  for (const r of await committedRecords(testBrokers(), topic)) {
    const offset = BigInt(r.offset);
    if (offset > (last.get(r.partition) ?? -1n)) last.set(r.partition, offset);
  }
  const admin = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await until(
      async () => {
        const [{ partitions }] = await admin.fetchOffsets({ groupId, topics: [topic] });
        const at = new Map(partitions.map((p) => [p.partition, BigInt(p.offset)]));
        return [...last].every(([partition, offset]) => (at.get(partition) ?? -1n) > offset) ? true : undefined;
      },
      timeoutMs,
      200,
      `group ${groupId} committed past the records of ${topic}`,
    );
  } finally {
    await admin.disconnect();
  }
}
