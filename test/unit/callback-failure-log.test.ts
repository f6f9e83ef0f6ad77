import { CallbackFailureLog } from '../../consumers/callback-bridge/callback-failure-log';
import { until } from '../support/until';
import { capturedLogger } from './fakes';

/*
 * A receiver that every task calls back, down: each task's callback fails, then is dead-lettered. The log tells the
 * first of each kind in a window, with what it was about, and then how many more, not a line per task.
 */
test('the first failure of a window is told in full, the rest counted in one line when the window ends', async () => {
  const { logger, lines } = capturedLogger('info');
  const log = new CallbackFailureLog(logger, 50);
  for (let n = 0; n < 200; n += 1) log.tell('failed', { subscriptionId: `s${n}`, error: 'HTTP 503' });
  for (let n = 0; n < 3; n += 1) log.tell('dead-lettered', { subscriptionId: `s${n}`, attempts: 5 });
  expect(lines.map(({ level, msg, subscriptionId }) => ({ level, msg, subscriptionId }))).toEqual([
    { level: 30, msg: 'callback failed; it is retried', subscriptionId: 's0' },
    { level: 40, msg: 'callback dead-lettered after its last attempt', subscriptionId: 's0' },
  ]);
  await until(async () => (lines.length >= 4 ? true : undefined), 2000);
  expect(lines.slice(2).map(({ level, msg, more }) => ({ level, msg, more }))).toEqual(
    expect.arrayContaining([
      { level: 30, msg: 'more callbacks failed', more: 199 },
      { level: 40, msg: 'more callbacks were dead-lettered', more: 2 },
    ]),
  );
  // A new window tells the next one in full again.
  log.tell('failed', { subscriptionId: 'later', error: 'HTTP 503' });
  expect(lines.at(-1)).toMatchObject({ msg: 'callback failed; it is retried', subscriptionId: 'later' });
});

test("a lane's Kafka step retried in place is told once a window per step, the rest counted", async () => {
  const { logger, lines } = capturedLogger('info');
  const log = new CallbackFailureLog(logger, 50);
  // A broker outage: every lane retries the write of its attempt's record, some also a sync.
  for (let n = 0; n < 100; n += 1) log.tellRetry('record the attempt', { subscriptionId: `s${n}`, retryInMs: 100 });
  log.tellRetry('sync subscriptions', { subscriptionId: 's0', retryInMs: 100 });
  expect(lines.map(({ level, msg, subscriptionId }) => ({ level, msg, subscriptionId }))).toEqual([
    { level: 40, msg: 'could not record the attempt; trying again', subscriptionId: 's0' },
    { level: 40, msg: 'could not sync subscriptions; trying again', subscriptionId: 's0' },
  ]);
  await until(async () => (lines.length >= 3 ? true : undefined), 2000);
  expect(lines[2]).toMatchObject({ level: 40, msg: 'could not record the attempt, more times', more: 99 });
});
