import type { Agent } from 'undici';
import { CallbackBridge } from '../../consumers/callback-bridge/callback-bridge';
import type { Logger } from '../../src/logger';
import type { BacklogCursor } from '../../src/subscriptions/backlog-cursor';
import type { Subscription } from '../../src/subscriptions/subscription';
import { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import { FakePartitionReader, type FakePublisher, FakeView } from './fakes';

export const BRIDGE_TOPICS = {
  taskEvents: 'task-events',
  domainEvents: 'domain-events',
  deliveries: 'deliveries',
  callbackDeadLetters: 'dlq',
  callbackBacklogs: 'backlogs',
  onceCallbacks: 'once-callbacks',
};

/**
 * A CallbackBridge on fakes of the project's ports, its subscriptions in `view` (written to topic `subs`), its
 * receivers behind `agent` (undici's MockAgent). Generous bounds: nothing waits on them, and a machine with both cores
 * busy must not trip them.
 */
export function bridgeOnFakes(
  view: FakeView<Subscription>,
  publisher: FakePublisher,
  agent: unknown,
  logger: Logger,
): CallbackBridge {
  return new CallbackBridge(
    {
      runGroupConsumer: () => Promise.reject(new Error('not used here')),
      publisher,
      topics: BRIDGE_TOPICS,
      cursors: new FakeView<BacklogCursor>(),
      subscriptions: new SubscriptionStore({
        view,
        publisher,
        topic: 'subs',
        cursorTopic: 'backlogs',
        timeoutMs: 10000,
      }),
      groupId: 'bridge',
      allowPrivate: true,
      concurrency: 10,
      callbacks: { timeoutMs: 10000, maxAttempts: 1, backoffBaseMs: 1, backoffMaxMs: 1, laneBuffer: 10 },
      reader: new FakePartitionReader(publisher),
      kafkaTimeoutMs: 10000,
      logger,
    },
    agent as Agent,
    logger,
  );
}
