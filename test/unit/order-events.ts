import type { IncomingRecord } from '../../src/kafka/types';
import { topicNames } from '../../src/kafka/topics';
import type { Subscription } from '../../src/subscriptions/subscription';
import type { FakePublisher } from './fakes';

/** The bridge's unit tests on order.created events: one receiver origin, FakeKafka's domain-events topic. */
export const ORIGIN = 'http://receiver.test';
export const TOPIC = topicNames('unit.').domainEvents;

/** A continuous subscription to order.created whose receiver is `${ORIGIN}/${id}`. */
export function orderSubscription(id: string): Subscription {
  const at = new Date(0).toISOString();
  return {
    id,
    tenant: 't',
    callbackUrl: `${ORIGIN}/${id}`,
    mode: 'continuous',
    events: ['order.created'],
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    status: 'active',
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * `count` order.created events on `partition`, committed to the fake log, as the group consumer hands them over;
 * each carries `n` (by default partition * 1000 + its number) in its data, for receivers to record.
 */
export async function orderEvents(
  publisher: FakePublisher,
  { partition = 0, count, first = 0 }: { partition?: number; count: number; first?: number },
): Promise<IncomingRecord[]> {
  const records = Array.from({ length: count }, (_, i) => ({
    topic: TOPIC,
    key: `o${partition}-${first + i}`,
    partition,
    value: JSON.stringify({
      event: 'order.created',
      resource: `/orders/${partition}-${first + i}`,
      data: { n: partition * 1000 + first + i },
    }),
  }));
  const positions = await publisher.publish(records);
  return records.map((r, i) => ({
    ...r,
    offset: positions[i].offset,
    headers: {},
    timestamp: String(Date.now()),
    receivedAt: Date.now(),
  }));
}

export const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
