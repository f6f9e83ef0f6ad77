import type { Admin } from 'kafkajs';
import { uniquePrefix } from './test-service';
import { until } from './until';

/**
 * A fresh topic of the test's own, once every partition has a leader: kafkajs's own wait (waitForLeaders) gives up
 * on the UNKNOWN_TOPIC_OR_PARTITION a broker answers just after creation.
 */
export async function newTopic(admin: Admin, name: string, numPartitions = 2): Promise<string> {
  const topic = `${uniquePrefix(name)}topic`;
  await admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: false });
  await until(async () => {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] }).catch(() => ({ topics: [] }));
    const partitions = topics[0]?.partitions ?? [];
    return partitions.length === numPartitions && partitions.every((p) => p.leader >= 0) ? true : undefined;
  }, 30000);
  return topic;
}
