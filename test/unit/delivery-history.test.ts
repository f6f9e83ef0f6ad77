import { attemptKey, DeliveryHistory, type DeliveryAttempt } from '../../src/subscriptions/delivery-attempt';
import { FakeView } from './fakes';

/*
 * A subscription's attempts are keyed one by one, so they sit on different partitions of the deliveries topic, and
 * a view hands them over in whatever order it reads those partitions. The history lists them as they happened.
 */
function attempt(webhookId: string, n: number, at: string, outcome: DeliveryAttempt['outcome']): DeliveryAttempt {
  return { subscriptionId: 's1', webhookId, event: 'task.accepted', attempt: n, at, outcome, latencyMs: 1 };
}

test('attempts that arrive out of order are listed by time, then attempt number', () => {
  const view = new FakeView<DeliveryAttempt>();
  const history = new DeliveryHistory(view);
  const arrivals = [
    attempt('w1', 2, '2026-11-25T19:40:28.355Z', 'delivered'),
    attempt('w1', 1, '2026-11-25T19:40:28.175Z', 'failed'),
    attempt('w2', 3, '2026-11-25T19:40:29.000Z', 'failed'),
    attempt('w2', 3, '2026-11-25T19:40:29.000Z', 'dead-lettered'),
    attempt('w2', 1, '2026-11-25T19:40:28.500Z', 'failed'),
    attempt('w2', 2, '2026-11-25T19:40:28.800Z', 'failed'),
  ];
  for (const a of arrivals) view.set(attemptKey(a, 'r1'), a);
  const label = (a: DeliveryAttempt) =>
    `${a.webhookId}#${a.attempt}${a.outcome === 'dead-lettered' ? ' dead-lettered' : ''}`;
  expect(history.of('s1').map(label)).toEqual(['w1#1', 'w1#2', 'w2#1', 'w2#2', 'w2#3', 'w2#3 dead-lettered']);
});

test('the ones already in the view when it opens are ordered too', () => {
  const view = new FakeView<DeliveryAttempt>();
  const late = attempt('w1', 2, '2026-11-25T19:40:28.355Z', 'delivered');
  const early = attempt('w1', 1, '2026-11-25T19:40:28.175Z', 'failed');
  view.set(attemptKey(late, 'r1'), late);
  view.set(attemptKey(early, 'r1'), early);
  expect(new DeliveryHistory(view).of('s1').map((a) => a.attempt)).toEqual([1, 2]);
});

test('an event handled again after a bridge restart adds its attempts to the history, overwriting none', () => {
  const view = new FakeView<DeliveryAttempt>();
  const history = new DeliveryHistory(view);
  const first = [
    attempt('w1', 1, '2026-11-25T19:40:28.000Z', 'failed'),
    attempt('w1', 2, '2026-11-25T19:40:29.000Z', 'failed'),
    attempt('w1', 2, '2026-11-25T19:40:29.000Z', 'dead-lettered'),
  ];
  for (const a of first) view.set(attemptKey(a, 'before'), a);
  // The bridge died before it committed the event: the next one delivers it again, from attempt 1.
  const again = attempt('w1', 1, '2026-11-25T19:41:00.000Z', 'delivered');
  view.set(attemptKey(again, 'after'), again);
  expect(history.of('s1').map((a) => `${a.attempt}:${a.outcome}`)).toEqual([
    '1:failed',
    '2:failed',
    '2:dead-lettered',
    '1:delivered',
  ]);
});
