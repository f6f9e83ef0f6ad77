import type { ConsumerRole } from '../../src/service';
import { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import { BACKLOG_CURSORS_VIEW } from '../../src/subscriptions/backlog-cursor';
import { DELIVERIES_VIEW } from '../../src/subscriptions/delivery-attempt';
import { DeliveredCallbacks } from './delivered-callbacks';
import { startCallbackBridge } from './callback-bridge';

/** The bridge role: wires the callback bridge from the process's kernel. */
export const callbackBridgeRole: ConsumerRole = {
  role: 'bridge',
  async start({ kafka, config, logger, metrics, tracer }) {
    return startCallbackBridge({
      runGroupConsumer: (o) => kafka.runGroupConsumer(o),
      reader: kafka.partitionReader,
      cursors: await kafka.view(BACKLOG_CURSORS_VIEW),
      // The api's view of the same topic, in role all: one reading of it per process.
      delivered: new DeliveredCallbacks(await kafka.view(DELIVERIES_VIEW)),
      publisher: kafka.publisher,
      logger,
      topics: kafka.topics,
      subscriptions: await SubscriptionStore.open(kafka, {
        publisher: kafka.publisher,
        topic: kafka.topics.subscriptions,
        cursorTopic: kafka.topics.callbackBacklogs,
        timeoutMs: config.kafkaTimeoutMs,
      }),
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
