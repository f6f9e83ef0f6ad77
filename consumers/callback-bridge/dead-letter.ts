import type { OutgoingRecord } from '../../src/kafka/types';
import { MAX_SEND_BYTES, tooLarge } from '../../src/kafka/record-size';
import { attemptKey, type DeliveryAttempt } from '../../src/subscriptions/delivery-attempt';
import type { CallbackParts } from './lane-job';

/** A callback that used its last attempt, as the lane parks it. */
export interface DeadLetter {
  subscriptionId: string;
  message: CallbackParts;
  /** the handling's run (attemptKey) and its last attempt's number */
  run: string;
  attempts: number;
  lastError: string;
}

/**
 * The records that park a callback, written together: the letter on the dead-letter topic, and its record in the
 * delivery history, numbered as the last attempt, which it follows (it is no attempt of its own: the counts leave it
 * out).
 */
export function deadLetterRecords(
  topics: { deliveries: string; callbackDeadLetters: string },
  { subscriptionId, message, run, attempts, lastError }: DeadLetter,
  at = new Date().toISOString(),
): OutgoingRecord[] {
  const record: DeliveryAttempt = {
    subscriptionId,
    webhookId: message.webhookId,
    event: message.event,
    // As every attempt of the callback names its task (delivery-lanes.ts), so the history's last record does too.
    taskId: message.taskId || undefined,
    attempt: attempts,
    at,
    outcome: 'dead-lettered',
    latencyMs: 0,
    error: lastError,
  };
  const letter = { topic: topics.callbackDeadLetters, key: subscriptionId, value: '' };
  letter.value = JSON.stringify({ ...message, attempts, lastError, at });
  // A body near Kafka's limit (a task.accepted with a large input) would make the dead letter too large to write,
  // and the lane would try for ever: it is parked without its body, which its event still holds.
  if (tooLarge([letter], MAX_SEND_BYTES)) {
    const bodyOmitted = { bytes: Buffer.byteLength(message.body), reason: 'larger than a Kafka record may be' };
    letter.value = JSON.stringify({ ...message, body: undefined, bodyOmitted, attempts, lastError, at });
  }
  return [letter, { topic: topics.deliveries, key: attemptKey(record, run), value: JSON.stringify(record) }];
}
