import { LOG_RETENTION_MS } from '../../src/kafka/topics';
import {
  DELIVERIES_VIEW,
  DeliveryHistory,
  KEEP_ATTEMPTS,
  type DeliveryAttempt,
} from '../../src/subscriptions/delivery-attempt';
import { SUBSCRIPTIONS_VIEW, type Subscription } from '../../src/subscriptions/subscription';
import { SubscriptionRetention } from '../../src/subscriptions/subscription-retention';
import { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import { capturedLogger, FakeKafka } from './fakes';

const RETENTION_MS = 60000;

async function setup(tasks: string[] = []) {
  const kafka = new FakeKafka();
  const store = await SubscriptionStore.open(kafka, {
    publisher: kafka.publisher,
    topic: kafka.topics.subscriptions,
    cursorTopic: kafka.topics.callbackBacklogs,
    timeoutMs: 1000,
    retentionMs: RETENTION_MS,
  });
  const history = await DeliveryHistory.open(kafka);
  const { logger, lines } = capturedLogger('info');
  const retention = new SubscriptionRetention({
    store,
    history,
    publisher: kafka.publisher,
    deliveriesTopic: kafka.topics.deliveries,
    taskExists: (id) => tasks.includes(id),
    retentionMs: RETENTION_MS,
    timeoutMs: 1000,
    logger,
  });
  return {
    kafka,
    store,
    history,
    retention,
    lines,
    subscriptions: kafka.viewOf(SUBSCRIPTIONS_VIEW),
    deliveries: kafka.viewOf(DELIVERIES_VIEW),
  };
}

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

function subscription(id: string, changedAgoMs: number, more: Partial<Subscription> = {}): Subscription {
  return {
    id,
    tenant: 't',
    callbackUrl: 'https://example.com/hook',
    mode: 'once',
    events: ['order.created'],
    secret: 'whsec_x',
    status: 'cancelled',
    cancelReason: 'requested',
    createdAt: ago(changedAgoMs + 1000),
    updatedAt: ago(changedAgoMs),
    ...more,
  };
}

function attempt(subscriptionId: string, n: number, madeAgoMs: number): DeliveryAttempt {
  const a = { subscriptionId, webhookId: `msg_${subscriptionId}`, event: 'order.created', attempt: n };
  return { ...a, at: ago(madeAgoMs), outcome: 'failed', latencyMs: 1 };
}

describe('subscription retention', () => {
  test('a cancelled subscription is gone at once when its window has passed, and says when in expiresAt', async () => {
    const { store, subscriptions } = await setup();
    subscriptions.set('old', subscription('old', RETENTION_MS + 1));
    subscriptions.set('recent', subscription('recent', 1000));
    subscriptions.set(
      'active',
      subscription('active', RETENTION_MS * 2, { status: 'active', cancelReason: undefined }),
    );
    expect(store.get('old')).toBeUndefined();
    expect(store.list('t').map((s) => s.id)).toEqual(['active', 'recent']);
    const recent = store.get('recent') as Subscription;
    expect(store.expiresAt(recent)).toBe(Date.parse(recent.updatedAt) + RETENTION_MS);
    expect(store.expiresAt(store.get('active') as Subscription)).toBeUndefined();
  });

  test('a sweep tombstones expired subscriptions and old attempts, and keeps everything else', async () => {
    const { kafka, retention, subscriptions, deliveries, history } = await setup(['live-task']);
    subscriptions.set('old', subscription('old', RETENTION_MS + 1));
    subscriptions.set('recent', subscription('recent', 1000));
    subscriptions.set('events', subscription('events', RETENTION_MS * 2, { status: 'active' }));
    const taskSub = { status: 'active' as const, mode: 'continuous' as const, events: undefined };
    const orphanAge = LOG_RETENTION_MS + 1;
    subscriptions.set('orphan', subscription('orphan', orphanAge, { ...taskSub, taskId: 'forgotten-task' }));
    // Past the window but within the events topic's retention: its task's events may still be on their way.
    subscriptions.set('young', subscription('young', RETENTION_MS + 1, { ...taskSub, taskId: 'forgotten-task' }));
    subscriptions.set('live', subscription('live', orphanAge, { ...taskSub, taskId: 'live-task' }));
    for (const a of [attempt('old', 1, RETENTION_MS + 5), attempt('events', 1, RETENTION_MS + 2)]) {
      deliveries.set(`${a.subscriptionId}/${a.webhookId}/${a.attempt}`, a);
    }
    const kept = attempt('events', 2, 10);
    deliveries.set(`events/${kept.webhookId}/2`, kept);
    expect(history.of('events').map((a) => a.attempt)).toEqual([1, 2]);

    expect(await retention.sweep()).toEqual({ subscriptions: 2, attempts: 2, trimmed: 0 });
    expect(kafka.publisher.published.map((r) => [r.topic, r.key, r.value])).toEqual([
      [kafka.topics.subscriptions, 'old', null],
      [kafka.topics.subscriptions, 'orphan', null],
      [kafka.topics.deliveries, 'old/msg_old/1', null],
      [kafka.topics.deliveries, 'events/msg_events/1', null],
    ]);
    expect([...subscriptions.values()].map((s) => s.id).sort()).toEqual(['events', 'live', 'recent', 'young']);
    // The history index follows the tombstones, and drops a subscription with none left.
    expect(history.of('events').map((a) => a.attempt)).toEqual([2]);
    expect(history.of('old')).toEqual([]);
    expect(deliveries.size).toBe(1);
    expect(await retention.sweep()).toEqual({ subscriptions: 0, attempts: 0, trimmed: 0 });
  });

  test("a subscription's history keeps its last attempts: older ones are tombstoned, so the view keeps no more", async () => {
    const { kafka, retention, deliveries, history, lines } = await setup();
    const extra = 3;
    // Written newest first, as partitions may hand them over: the index still keeps the newest. Times from one
    // clock reading, so a busy machine's milliseconds between writes cannot reorder them.
    const base = Date.now() - 10000;
    for (let n = KEEP_ATTEMPTS + extra; n >= 1; n -= 1) {
      const a = { ...attempt('busy', 1, 0), webhookId: `msg_${n}`, at: new Date(base + n).toISOString() };
      deliveries.set(`busy/msg_${n}/1`, a);
    }
    expect(history.of('busy')).toHaveLength(KEEP_ATTEMPTS);
    expect(await retention.sweep()).toEqual({ subscriptions: 0, attempts: 0, trimmed: extra });
    // Told as what it is: a busy subscription's history kept short, not attempts past the window.
    expect(lines.map((l) => [l.msg, l.attempts])).toEqual([
      [`forgot delivery attempts past the last ${KEEP_ATTEMPTS}`, 3],
    ]);
    expect(kafka.publisher.published.map((r) => r.key)).toEqual(['busy/msg_3/1', 'busy/msg_2/1', 'busy/msg_1/1']);
    expect(deliveries.size).toBe(KEEP_ATTEMPTS);
    expect(history.of('busy')).toHaveLength(KEEP_ATTEMPTS);
  });

  test('a key written again replaces its attempt in the index; its tombstone leaves nothing behind', async () => {
    const { deliveries, history } = await setup();
    const first = attempt('again', 1, 5000);
    deliveries.set('again/msg_again/1', first);
    // The same event delivered again after a bridge restart: its attempts are numbered from 1 again.
    deliveries.set('again/msg_again/1', { ...first, at: ago(10), outcome: 'delivered' });
    expect(history.of('again').map((a) => a.outcome)).toEqual(['delivered']);
    deliveries.set('again/msg_again/1', undefined);
    expect(history.of('again')).toEqual([]);
  });

  test('a sweep that fails is logged and the next interval tries again; stop leaves no timer', async () => {
    jest.useFakeTimers();
    try {
      const { kafka, retention, subscriptions, lines } = await setup();
      subscriptions.set('old', subscription('old', RETENTION_MS + 1));
      kafka.publisher.failNext = 1;
      retention.start();
      await jest.advanceTimersByTimeAsync(retention.intervalMs);
      expect(lines.map((l) => l.msg)).toEqual([
        'could not forget expired subscriptions or delivery attempts; trying again next time',
      ]);
      expect(lines[0].err).toMatchObject({ stack: expect.any(String) });
      await jest.advanceTimersByTimeAsync(retention.intervalMs);
      expect(kafka.publisher.published.map((r) => r.key)).toEqual(['old']);
      retention.stop();
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
