import { IdempotencyKeys } from '../../src/idempotency/idempotency-keys';
import { IDEMPOTENCY_KEY_TTL_MS } from '../../src/idempotency/key-fold';
import type { IdempotencyRecord } from '../../src/idempotency/idempotency-records';
import { capturedLogger, FakePublisher, FakeView } from './fakes';

const HOUR = 3600 * 1000;

function keys(now: number, records: [string, IdempotencyRecord][] = []) {
  const view = new FakeView<IdempotencyRecord>();
  for (const [key, value] of records) view.set(key, value);
  const publisher = new FakePublisher((written) => {
    for (const r of written) view.set(r.key, r.value === null ? undefined : (JSON.parse(r.value) as IdempotencyRecord));
  });
  const { logger, lines } = capturedLogger();
  const k = new IdempotencyKeys({ view, publisher, topic: 'keys', partitionFor: () => 0, timeoutMs: 1000, logger });
  return { keys: k, view, publisher, lines, now };
}

const done = (scope: string, at: number): IdempotencyRecord => ({
  kind: 'done',
  scope,
  fingerprint: 'fp',
  at,
  answer: { status: 202, ids: ['task-1'] },
});
const claim = (scope: string, at: number): IdempotencyRecord => ({
  kind: 'claim',
  scope,
  claimId: `c-${at}`,
  fingerprint: 'fp',
  at,
});

describe('forgetting idempotency keys', () => {
  test('answers older than 24 h and claims long expired are tombstoned; live ones stay', async () => {
    const now = Date.now();
    const { keys: k, publisher } = keys(now, [
      ['t/old', done('t/old', now - IDEMPOTENCY_KEY_TTL_MS - 1)],
      ['t/young', done('t/young', now - HOUR)],
      ['!claim/t/stale', claim('t/stale', now - 2 * HOUR)],
      ['!claim/t/fresh', claim('t/fresh', now - 1000)],
    ]);
    expect(await k.sweep(now)).toBe(2);
    expect(publisher.published.map((r) => [r.key, r.value])).toEqual([
      ['t/old', null],
      ['!claim/t/stale', null],
    ]);
    expect(await k.begin('t', 'young', 'fp')).toMatchObject({ kind: 'replay' });
  });

  test('a sweep that fails is logged and tried again at the next interval', async () => {
    jest.useFakeTimers();
    try {
      const now = Date.now();
      const { keys: k, publisher, lines } = keys(now, [['t/old', done('t/old', now - IDEMPOTENCY_KEY_TTL_MS - 1)]]);
      publisher.failNext = 1;
      k.startSweeping(1000);
      await jest.advanceTimersByTimeAsync(1000);
      expect(lines.map((l) => l.msg)).toEqual(['could not forget expired idempotency keys']);
      expect(publisher.published).toHaveLength(0);
      await jest.advanceTimersByTimeAsync(1000);
      expect(publisher.published.map((r) => r.key)).toEqual(['t/old']);
      k.stop();
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  test('a keyed request that wrote nothing frees its key, even when the release cannot be written', async () => {
    const { keys: k, publisher, lines } = keys(Date.now());
    const decision = await k.begin('t', 'k-1', 'fp');
    if (decision.kind !== 'new') throw new Error(`expected a new key, got ${decision.kind}`);
    publisher.failNext = 1;
    await expect(
      decision.run(
        () => ({ status: 400, ids: [] }),
        async () => {
          throw new Error('invalid request');
        },
      ),
    ).rejects.toThrow('invalid request');
    // The release is written in the background; a turn of the event loop lets its failure be handled.
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => l.msg)).toEqual(['could not release an idempotency key']);
    expect((await k.begin('t', 'k-1', 'another')).kind).toBe('new');
  });
});
