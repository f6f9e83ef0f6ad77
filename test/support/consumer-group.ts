import { Kafka, logLevel } from 'kafkajs';
import { testBrokers } from './test-service';
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
