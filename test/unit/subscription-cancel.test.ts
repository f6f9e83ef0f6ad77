import type { Subscription } from '../../src/subscriptions/subscription';
import { CANCEL_SETTLE_MS } from '../../src/subscriptions/subscription-lease';
import { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import { FakePublisher, FakeView } from './fakes';

/*
 * The api's half of the subscriptions lease (subscription-lease.ts): a cancel answers only after bridges can no
 * longer hold a view from before it.
 */
function store() {
  const view = new FakeView<Subscription>();
  const publisher = new FakePublisher();
  const s = new SubscriptionStore({ view, publisher, topic: 'subs', cursorTopic: 'backlogs', timeoutMs: 3000 });
  return { view, publisher, store: s };
}

const NEW = { tenant: 't', callbackUrl: 'http://receiver.test/a', mode: 'continuous' } as const;

describe('SubscriptionStore.cancel', () => {
  test('writes the cancellation, then waits the settle time after it is applied', async () => {
    const { publisher, store: subscriptions } = store();
    const active = await subscriptions.create(NEW);
    const started = performance.now();
    const cancelled = await subscriptions.cancel(active, 'requested');
    expect(performance.now() - started).toBeGreaterThanOrEqual(CANCEL_SETTLE_MS);
    expect(cancelled).toMatchObject({ status: 'cancelled', cancelReason: 'requested' });
    expect(publisher.on('subs').map((r) => JSON.parse(String(r.value)).status)).toEqual(['active', 'cancelled']);
  });

  test('a cancel of a subscription already cancelled writes nothing but still waits the settle time', async () => {
    const { publisher, store: subscriptions } = store();
    const active = await subscriptions.create(NEW);
    const ended: Subscription = { ...active, status: 'cancelled', cancelReason: 'gone' };
    const started = performance.now();
    expect(await subscriptions.cancel(ended, 'requested')).toBe(ended);
    expect(performance.now() - started).toBeGreaterThanOrEqual(CANCEL_SETTLE_MS);
    expect(publisher.on('subs')).toHaveLength(1);
  });
});
