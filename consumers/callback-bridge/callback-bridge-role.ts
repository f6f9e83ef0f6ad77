import type { ConsumerRole } from '../../src/service';
import { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import { BACKLOG_CURSORS_VIEW } from '../../src/subscriptions/backlog-cursor';
import { DELIVERIES_VIEW } from '../../src/subscriptions/delivery-attempt';
import { DeliveredCallbacks } from './delivered-callbacks';
import { startCallbackBridge } from './callback-bridge';
import { settlesWithin } from '../../src/lib/settles-within';

/** The bridge role: wires the callback bridge from the process's kernel. */
export const callbackBridgeRole: ConsumerRole = {
  role: 'bridge',
  async start({ kafka, config, logger, metrics, tracer }) {
    // A callback's attempt is recorded after it is sent, and a crash sends again what was not recorded. The
    // publisher's first write also initializes its transactional ids (about half a second): a bridge killed that
    // soon after its start sent again every callback of its life. They are initialized while the views are read.
    const warming = kafka.warmUp();
    // Read side by side: each waits mostly for its topic's end offsets and fetches. All of them settle before a
    // failure is thrown, so a failed start's close finds none still opening connections.
    const opening = [
      kafka.view(BACKLOG_CURSORS_VIEW),
      // The api's view of the same topic, in role all: one reading of it per process.
      kafka.view(DELIVERIES_VIEW),
      SubscriptionStore.open(kafka, {
        publisher: kafka.publisher,
        topic: kafka.topics.subscriptions,
        cursorTopic: kafka.topics.callbackBacklogs,
        timeoutMs: config.kafkaTimeoutMs,
      }),
    ] as const;
    await Promise.allSettled(opening);
    const [cursors, deliveries, subscriptions] = await Promise.all(opening);
    // Bounded: a warm-up is a head start, and a coordinator slow to answer must not hold the start up beyond it.
    await settlesWithin(warming, config.kafkaTimeoutMs);
    return startCallbackBridge({
      runGroupConsumer: (o) => kafka.runGroupConsumer(o),
      reader: kafka.partitionReader,
      cursors,
      delivered: new DeliveredCallbacks(deliveries),
      publisher: kafka.publisher,
      logger,
      topics: kafka.topics,
      subscriptions,
      groupId: `${config.topicPrefix}callback-bridge`,
      allowPrivate: config.callbacks.allowPrivate,
      concurrency: config.callbacks.concurrency,
      callbacks: config.callbacks,
      kafkaTimeoutMs: config.kafkaTimeoutMs,
      // Callback links are relative to the API root, as DESIGN draws them; absolute on PUBLIC_URL where it is set.
      publicUrl: callbackBase(config.publicUrl),
      metrics,
      tracer,
    });
  },
};

function callbackBase(publicUrl: string | undefined): (() => string) | undefined {
  return publicUrl === undefined ? undefined : () => publicUrl;
}
