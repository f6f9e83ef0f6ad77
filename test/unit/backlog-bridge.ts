import { setMaxListeners } from 'node:events';
import { MockAgent, type Agent } from 'undici';
import { CallbackBridge } from '../../consumers/callback-bridge/callback-bridge';
import { BACKLOG_CURSORS_VIEW } from '../../src/subscriptions/backlog-cursor';
import type { PartitionReader } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import type { Subscription } from '../../src/subscriptions/subscription';
import { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import { FakeKafka, FakePartitionReader, FakeView } from './fakes';
import { ORIGIN } from './order-events';

export interface BacklogBridgeOptions {
  /** CALLBACK_LANE_BUFFER */
  laneBuffer: number;
  /** how long each receiver takes to answer */
  delayMs?: number;
  /**
   * CALLBACK_CONCURRENCY; by default no larger than a lane's buffer, so every lane keeps to its buffer, as under
   * pressure (BridgeWaiting)
   */
  concurrency?: number;
  /** the reader the bridge's backlogs read through, made from the fake one */
  wrap?: (reader: PartitionReader) => PartitionReader;
  /** how far behind a lane past its buffer may fall (LANE_BEHIND_MS by default) */
  laneBehindMs?: number;
}

/**
 * A callback bridge on the project's fakes, for the lane backlogs' tests: the publisher's log is the partitions a
 * backlog reads, undici's MockAgent the receivers (`${ORIGIN}/<subscription id>`), which record the `n` of every
 * callback they accept.
 */
export function backlogBridge({
  laneBuffer,
  delayMs = 0,
  concurrency = laneBuffer,
  wrap,
  laneBehindMs,
}: BacklogBridgeOptions) {
  const kafka = new FakeKafka();
  const { publisher, topics } = kafka;
  const cursors = kafka.viewOf(BACKLOG_CURSORS_VIEW);
  const view = new FakeView<Subscription>();
  // Synced long after every event here: matching needs no sync, and every lane is within its lease.
  view.syncedAt = Date.now() + 3600000;
  cursors.syncedAt = view.syncedAt;
  const agent = new MockAgent();
  agent.disableNetConnect();
  const fakeReader = new FakePartitionReader(publisher);
  const reader = wrap ? wrap(fakeReader) : fakeReader;
  const logger = createLogger('silent');
  /** A bridge process on these fakes; a second one plays the bridge that takes a partition over. */
  const newBridge = () =>
    new CallbackBridge(
      {
        runGroupConsumer: () => Promise.reject(new Error('not used here')),
        reader,
        cursors,
        publisher,
        topics,
        subscriptions: new SubscriptionStore({
          view,
          publisher,
          topic: 'subs',
          cursorTopic: 'backlogs',
          timeoutMs: 1000,
        }),
        groupId: 'bridge',
        allowPrivate: true,
        concurrency,
        callbacks: { timeoutMs: 1000, maxAttempts: 1000, backoffBaseMs: 1, backoffMaxMs: 5, laneBuffer, laneBehindMs },
        kafkaTimeoutMs: 1000,
        logger,
      },
      agent as unknown as Agent,
      logger,
    );
  /** per subscription: the `n` of every accepted callback, in the order they came */
  const accepted = new Map<string, number[]>();
  /** subscriptions whose receiver answers 503 */
  const down = new Set<string>();
  /** events (by n) whose every attempt is answered 503 while they are in this set */
  const refused = new Set<number>();
  let attempts = 0;
  const interceptor = agent
    .get(ORIGIN)
    .intercept({ path: /.*/, method: 'POST' })
    .reply((opts) => {
      attempts += 1;
      const id = String(opts.path).slice(1);
      const n = Number(JSON.parse(String(opts.body)).data.n);
      if (down.has(id) || refused.has(n)) return { statusCode: 503 };
      accepted.set(id, [...(accepted.get(id) ?? []), n]);
      return { statusCode: 204 };
    });
  (delayMs > 0 ? interceptor.delay(delayMs) : interceptor).persist();
  return {
    publisher,
    topics,
    view,
    cursors,
    reader: fakeReader,
    bridge: newBridge(),
    newBridge,
    agent,
    accepted,
    down,
    refused,
    attempts: () => attempts,
  };
}

/**
 * Hand-back controllers for the partitions a test's bridge owns: `owned()` makes one, and each is handed back after
 * every test (a bridge's backlogs and lanes end with their partition, as when a member stops).
 */
export function partitionOwnership(): () => AbortController {
  const handBacks: AbortController[] = [];
  afterEach(() => {
    for (const h of handBacks.splice(0)) h.abort(new Error('test over'));
  });
  return () => {
    const c = new AbortController();
    // As the group consumer's PartitionProgress does: every backlog and lane of the partition listens to its signal.
    setMaxListeners(Infinity, c.signal);
    handBacks.push(c);
    return c;
  };
}
