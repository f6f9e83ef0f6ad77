import { KafkaStateView } from '../../src/kafka/state-view';
import type { FetchedMessage, FetchingBroker, ReadingCluster } from '../../src/kafka/reader-clusters';
import type { WrittenRecord } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';

const TOPIC = 'state';

/**
 * One partition's log behind the ReadingCluster port. While `held`, a fetch answers nothing new (as a broker whose
 * answer has not reached the view yet), so a test decides what the view has read when a writer applies its own write.
 */
class HeldLog {
  readonly records: { key: string; value: string | null }[] = [];
  held = false;
  private wake: (() => void)[] = [];

  append(key: string, value: string | null): WrittenRecord {
    this.records.push({ key, value });
    this.release(this.held);
    return { topic: TOPIC, partition: 0, offset: String(this.records.length - 1), key, value };
  }

  release(held = false): void {
    this.held = held;
    for (const w of this.wake.splice(0)) w();
  }

  cluster(): ReadingCluster {
    const broker: FetchingBroker = {
      fetch: async (request) => {
        const from = Number(request.topics[0].partitions[0].fetchOffset);
        if (this.held || this.records.length <= from) {
          await new Promise<void>((resolve) => {
            this.wake.push(resolve);
            setTimeout(resolve, 20);
          });
        }
        const upTo = this.held ? from : this.records.length;
        const messages: FetchedMessage[] = this.records.slice(from, upTo).map((r, i) => ({
          offset: String(from + i),
          key: Buffer.from(r.key),
          value: r.value === null ? null : Buffer.from(r.value),
          timestamp: '0',
          batchContext: { firstOffset: String(from + i), lastOffsetDelta: 0 },
        }));
        return { responses: [{ topicName: TOPIC, partitions: [{ partition: 0, abortedTransactions: [], messages }] }] };
      },
    };
    return {
      connect: async () => undefined,
      disconnect: async () => undefined,
      addTargetTopic: async () => undefined,
      refreshMetadata: async () => undefined,
      findTopicPartitionMetadata: () => [{ partitionId: 0 }],
      findLeaderForPartitions: () => ({ '0': [0] }),
      findBroker: async () => broker,
      fetchTopicsOffset: async () => [{ topic: TOPIC, partitions: [{ partition: 0, offset: '0' }] }],
    };
  }
}

async function viewOn(log: HeldLog): Promise<KafkaStateView<string>> {
  const view = new KafkaStateView<string>(
    () => log.cluster(),
    TOPIC,
    (v) => v,
    async () => new Map([[0, BigInt(log.records.length)]]),
    createLogger('silent'),
  );
  await view.start(2000);
  return view;
}

/**
 * A view whose reading is held after it applied its own write of `a` ahead. atStuckTime runs checks 6 s later, past
 * the time a reading may trail its own writes (AHEAD_LIMIT_MS), by the clock the view reads.
 */
async function stuckView(): Promise<{ log: HeldLog; view: KafkaStateView<string> }> {
  const log = new HeldLog();
  const view = await viewOn(log);
  log.held = true;
  expect(view.applyWritten([log.append('a', 'first')])).toBe(true);
  return { log, view };
}

function atStuckTime(checks: () => void): void {
  const clock = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 6000);
  try {
    checks();
  } finally {
    clock.mockRestore();
  }
}

const readTo = (view: KafkaStateView<string>, log: HeldLog) =>
  view.waitFor([{ topic: TOPIC, partition: 0, offset: String(log.records.length - 1) }], 2000);

describe("a view applying its own process's writes (read-your-writes without a read-back)", () => {
  let view: KafkaStateView<string> | undefined;
  afterEach(() => view?.stop());

  test('shows a write at once, before its reading gets there, and applies it once', async () => {
    const log = new HeldLog();
    view = await viewOn(log);
    const changes: string[] = [];
    view.onChange((key, value) => changes.push(`${key}=${value}`));
    log.held = true;
    view.applyWritten([log.append('a', 'v1')]);
    expect(view.get('a')).toBe('v1');
    log.release();
    await readTo(view, log);
    expect(changes).toEqual(['a=v1']);
  });

  test("an older record of the key (another writer's, not read yet) does not take the key back", async () => {
    const log = new HeldLog();
    view = await viewOn(log);
    const changes: string[] = [];
    view.onChange((key, value) => changes.push(`${key}=${value}`));
    log.held = true;
    log.append('a', 'theirs');
    log.append('b', 'other key');
    view.applyWritten([log.append('a', 'mine')]);
    log.release();
    await readTo(view, log);
    expect(view.get('a')).toBe('mine');
    expect(changes).toEqual(['a=mine', 'b=other key']);
  });

  test('a newer record of the key, read after the write, is applied', async () => {
    const log = new HeldLog();
    view = await viewOn(log);
    log.held = true;
    view.applyWritten([log.append('a', 'mine')]);
    log.append('a', 'later');
    log.release();
    await readTo(view, log);
    expect(view.get('a')).toBe('later');
  });

  test('a write the reading already passed is not applied again over a newer value', async () => {
    const log = new HeldLog();
    view = await viewOn(log);
    const mine = log.append('a', 'mine');
    log.append('a', 'later');
    await readTo(view, log);
    view.applyWritten([mine]);
    expect(view.get('a')).toBe('later');
  });

  test('a tombstone written is a delete at once; records of other topics are left to their views', async () => {
    const log = new HeldLog();
    view = await viewOn(log);
    log.append('a', 'v1');
    await readTo(view, log);
    log.held = true;
    view.applyWritten([log.append('a', null), { topic: 'elsewhere', partition: 0, offset: '0', key: 'z', value: 'x' }]);
    expect(view.get('a')).toBeUndefined();
    expect(view.get('z')).toBeUndefined();
    log.release();
    await readTo(view, log);
    expect(view.get('a')).toBeUndefined();
  });

  test('a reading that trails its own writes by seconds (stuck) applies no change of a key it shows: the writer waits', async () => {
    const { log, view: stuck } = await stuckView();
    view = stuck;
    atStuckTime(() => {
      // A change of 'a' would be made on what the view shows of it, which may be stale: it is read back first.
      expect(stuck.applyWritten([log.append('a', 'changed'), log.append('b', 'second')])).toBe(false);
      expect([stuck.get('a'), stuck.get('b')]).toEqual(['first', undefined]);
    });
    log.release();
    await readTo(stuck, log);
    expect([stuck.get('a'), stuck.get('b')]).toEqual(['changed', 'second']);
    expect(stuck.applyWritten([log.append('c', 'third')])).toBe(true);
  });

  test('a stuck reading still shows a write that creates keys: nothing of them is there to be stale', async () => {
    // A runner killed mid-transaction holds a partition's committed reading for ~10 s (until its partition's next
    // owner fences it). A task accepted meanwhile is committed: answering 503 for it would hide a write that was made.
    const { log, view: stuck } = await stuckView();
    view = stuck;
    atStuckTime(() => {
      expect(stuck.applyWritten([log.append('new-1', 'created'), log.append('new-2', null)])).toBe(true);
      expect(stuck.get('new-1')).toBe('created');
    });
    log.release();
    await readTo(stuck, log);
    expect([stuck.get('a'), stuck.get('new-1'), stuck.get('new-2')]).toEqual(['first', 'created', undefined]);
  });

  test('a reading stuck for good shows no more than 10,000 creations ahead; past them, creations are answered, shown once read', async () => {
    // A 503 for a committed creation would have a client without an Idempotency-Key make it again (a bulk create of a
    // hundred orders per request, an api killed mid-transaction: the audit saw committed creations answered 503).
    const { log, view: stuck } = await stuckView();
    view = stuck;
    atStuckTime(() => {
      for (let n = 0; n < 10000; n++) expect(stuck.applyWritten([log.append(`new-${n}`, 'created')])).toBe(true);
      expect([stuck.get('new-9998'), stuck.get('new-9999')]).toEqual(['created', undefined]);
      // A change of a key it shows still waits to read itself back.
      expect(stuck.applyWritten([log.append('a', 'changed')])).toBe(false);
    });
    log.release();
    await readTo(stuck, log);
    expect([stuck.get('new-9999'), stuck.get('a')]).toEqual(['created', 'changed']);
  });

  test("a listener that throws fails neither the write that applied the record nor the view's reading", async () => {
    const log = new HeldLog();
    view = await viewOn(log);
    view.onChange(() => {
      throw new Error('listener bug');
    });
    log.held = true;
    expect(() => view?.applyWritten([log.append('a', 'v1')])).not.toThrow();
    log.append('b', 'v2');
    log.release();
    await readTo(view, log);
    expect([view.get('a'), view.get('b')]).toEqual(['v1', 'v2']);
  });
});
