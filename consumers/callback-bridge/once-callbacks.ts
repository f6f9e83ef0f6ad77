import type { IncomingRecord, OutgoingRecord } from '../../src/kafka/types';
import { MAX_SEND_BYTES, tooLarge } from '../../src/kafka/record-size';
import type { Subscription } from '../../src/subscriptions/subscription';
import type { CallbackParts } from './lane-job';

/*
 * A `once` subscription to event kinds promises exactly one accepted callback (DESIGN: only-once), but its events are
 * on every partition of the event topics, and several bridges each hold some of them: each would send the first match
 * it holds before the end of the subscription reached it. So no bridge sends such a callback itself. Each hands it to
 * the once-callbacks topic, keyed by the subscription: all of a subscription's go to one partition, whose one owner
 * delivers them in its lane, one at a time, and the first one accepted ends the subscription before the next is
 * tried. A dead-lettered one is not accepted, so the next is tried, as with one bridge.
 *
 * A lane hands such a callback on in its turn (delivery-lanes.ts), so the lane's backlogs and commits hold for it as
 * for any callback. The record's value is the callback's body as it is sent (no JSON escaping to grow it); the rest
 * are headers.
 */

const SUBSCRIPTION = 'hs_subscription';
const WEBHOOK_ID = 'hs_webhook_id';
const EVENT = 'hs_event';
const TASK_ID = 'hs_task_id';
const TRACEPARENT = 'traceparent';

/** Callbacks one bridge decides between: a `once` subscription to event kinds' (a task's are on one partition). */
export function decidedByOneBridge(sub: Subscription): boolean {
  return sub.mode === 'once' && sub.taskId === undefined;
}

/** The record that hands a callback to the subscription's one deciding bridge. */
export function onceCallbackRecord(topic: string, parts: CallbackParts): OutgoingRecord {
  const headers: Record<string, string> = {
    [SUBSCRIPTION]: parts.subscriptionId,
    [WEBHOOK_ID]: parts.webhookId,
    [EVENT]: parts.event,
  };
  if (parts.taskId) headers[TASK_ID] = parts.taskId;
  if (parts.traceparent) headers[TRACEPARENT] = parts.traceparent;
  return { topic, key: parts.subscriptionId, value: parts.body, headers };
}

/**
 * Whether the callback is handed on (CallbackParts.handOn). Not when its record would be larger than a send to Kafka
 * takes (a body within a few hundred bytes of the limit, whose event just fit): retried, it would fail for ever, so
 * the bridge that read its event sends it, as it sends a `continuous` one.
 */
export function handsOn(topic: string, parts: CallbackParts): true | undefined {
  return tooLarge([onceCallbackRecord(topic, parts)], MAX_SEND_BYTES) ? undefined : true;
}

/** The callback a once-callbacks record hands on; undefined for a record this service did not write. */
export function parseOnceCallback(record: IncomingRecord): CallbackParts | undefined {
  const { headers } = record;
  const subscriptionId = headers[SUBSCRIPTION];
  const webhookId = headers[WEBHOOK_ID];
  const event = headers[EVENT];
  if (!subscriptionId || !webhookId || !event || record.value === null || record.key !== subscriptionId) {
    return undefined;
  }
  return {
    subscriptionId,
    webhookId,
    event,
    taskId: headers[TASK_ID] || undefined,
    body: record.value,
    traceparent: headers[TRACEPARENT] || undefined,
    handOn: undefined,
  };
}
