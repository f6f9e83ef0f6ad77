import { IdempotencyKeys } from '../../src/idempotency/idempotency-keys';
import type { IdempotencyRecord } from '../../src/idempotency/idempotency-records';
import { createLogger } from '../../src/logger';
import { FakePublisher, FakeView } from './fakes';

/*
 * A replay reads what the key created from other views than the key's own (the tasks view); the done record was
 * committed with the creation, so those views are made to catch up first, or a repeat could answer 404 for a task
 * that exists.
 */
function keys(beforeReplay: () => Promise<void>) {
  const view = new FakeView<IdempotencyRecord>();
  const done: IdempotencyRecord = {
    kind: 'done',
    scope: 't/key-1',
    fingerprint: 'fp',
    at: Date.now(),
    answer: { status: 202, ids: ['task-1'] },
  };
  view.set('t/key-1', done);
  const k = new IdempotencyKeys({
    view,
    publisher: new FakePublisher(),
    topic: 'keys',
    partitionFor: () => 0,
    timeoutMs: 1000,
    logger: createLogger('silent'),
    beforeReplay,
  });
  return k;
}

test('a replay is decided only after the views have caught up', async () => {
  let synced = false;
  const k = keys(async () => {
    await Promise.resolve();
    synced = true;
  });
  const decision = await k.begin('t', 'key-1', 'fp');
  expect(decision).toMatchObject({ kind: 'replay', answer: { ids: ['task-1'] } });
  expect(synced).toBe(true);
});

test('a key used with another request is refused without waiting for any view', async () => {
  let calls = 0;
  const k = keys(async () => {
    calls += 1;
  });
  expect(await k.begin('t', 'key-1', 'another')).toEqual({ kind: 'reused' });
  expect(calls).toBe(0);
});
