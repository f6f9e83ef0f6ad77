import type { IncomingRecord, PartitionReader, PartitionReading } from '../../src/kafka/types';
import { ReadingSlots } from '../../consumers/callback-bridge/reading-slots';
import { until } from '../support/until';
import { orderEvents, orderSubscription, range } from './order-events';
import { FakeCommitHolds } from './fakes';
import { backlogBridge, partitionOwnership } from './backlog-bridge';

/*
 * The lane backlogs' races, found in a review and each seen failing before its fix: a backlog that loses its wake-up
 * when asked to give up its reading slot, one that ends with its subscription while its callbacks are still in the
 * lane, and an eviction whose first callback of a partition belongs to a handed-back owner. Same fakes and style as
 * lane-backlog.test.ts: the publisher's log is the partitions, MockAgent the receivers, one FakeCommitHolds per
 * partition as the group consumer keeps them.
 */

// Each wait below allows 20 s: it ends as soon as its condition holds (2-8 s could be too short, both cores busy).

const owned = partitionOwnership();

const setup = (laneBuffer: number, delayMs = 0, wrap?: (reader: PartitionReader) => PartitionReader) =>
  backlogBridge({ laneBuffer, delayMs, wrap });

describe('more backlogs than reading slots, a dead endpoint that revives', () => {
  /*
   * One subscription with a backlog on 36-40 partitions (more than the 32 reading slots): each partition's events
   * delivered in order, none twice, every hold released, as backlogs take turns at reading.
   */
  test('a subscription with backlogs on more partitions than reading slots gets every event of each', async () => {
    const PARTITIONS = 40;
    const PER_PARTITION = 4;
    const { publisher, view, bridge, agent, accepted, reader } = setup(1, 2);
    view.set('s', orderSubscription('s'));
    const signal = owned().signal;
    const holds = Array.from({ length: PARTITIONS }, () => new FakeCommitHolds());
    const perPartition: IncomingRecord[][] = [];
    for (let p = 0; p < PARTITIONS; p += 1)
      perPartition.push(await orderEvents(publisher, { partition: p, count: PER_PARTITION }));
    // kafkajs hands the partitions' records over interleaved; each partition's in order.
    const handling: Promise<void>[] = [];
    for (let i = 0; i < PER_PARTITION; i += 1) {
      for (let p = 0; p < PARTITIONS; p += 1) {
        handling.push(bridge.onEvent(perPartition[p][i], signal, holds[p].holdCommit));
      }
    }
    await Promise.all(handling);
    const total = PARTITIONS * PER_PARTITION;
    try {
      await until(async () => ((accepted.get('s') ?? []).length >= total ? true : undefined), 20000, 10);
    } finally {
      const got = accepted.get('s') ?? [];
      const missing = perPartition
        .map((_, p) => [p, range(p * 1000, PER_PARTITION).filter((n) => !got.includes(n)).length])
        .filter(([, m]) => m > 0);
      const held = holds.map((h, p) => [p, h.lowest]).filter(([, l]) => l !== undefined);
      // What is stuck, for the report: partitions with events never delivered, and holds never released.
      if (missing.length > 0) console.log({ delivered: got.length, total, missing, held, open: reader.openReadings });
      await agent.close();
    }
    for (let p = 0; p < PARTITIONS; p += 1) {
      expect((accepted.get('s') ?? []).filter((n) => Math.floor(n / 1000) === p)).toEqual(
        range(p * 1000, PER_PARTITION),
      );
    }
    await until(async () => (holds.every((h) => h.lowest === undefined) ? true : undefined), 20000, 10);
  }, 60000);

  test.each([
    [2, 40, 3],
    [50, 40, 3],
    [100, 40, 2],
    [5, 36, 2],
  ])(
    'buffer %i, %i partitions x %i events: every event reaches the revived subscription',
    async (buffer, PARTITIONS, PER) => {
      const { publisher, view, bridge, agent, accepted, reader, down } = setup(buffer, 1);
      view.set('s', orderSubscription('s'));
      const signal = owned().signal;
      const holds = Array.from({ length: PARTITIONS }, () => new FakeCommitHolds());
      const perPartition: IncomingRecord[][] = [];
      for (let p = 0; p < PARTITIONS; p += 1)
        perPartition.push(await orderEvents(publisher, { partition: p, count: PER }));
      const handling: Promise<void>[] = [];
      for (let i = 0; i < PER; i += 1) {
        for (let p = 0; p < PARTITIONS; p += 1) {
          handling.push(bridge.onEvent(perPartition[p][i], signal, holds[p].holdCommit));
        }
        // the endpoint dies after the first round was handed over: readings are open and wait for room
        if (i === 0) {
          await new Promise((r) => setTimeout(r, 20));
          down.add('s');
        }
      }
      await new Promise((r) => setTimeout(r, 100));
      down.delete('s');
      await Promise.all(handling);
      const total = PARTITIONS * PER;
      try {
        await until(async () => (new Set(accepted.get('s') ?? []).size >= total ? true : undefined), 20000, 10);
      } finally {
        const got = accepted.get('s') ?? [];
        const missing = perPartition
          .map((_, p) => [p, range(p * 1000, PER).filter((n) => !got.includes(n)).length])
          .filter(([, m]) => m > 0);
        const held = holds.map((h, p) => [p, h.lowest]).filter(([, l]) => l !== undefined);
        if (missing.length > 0) console.log({ delivered: got.length, total, missing, held, open: reader.openReadings });
        await agent.close();
      }
      for (let p = 0; p < PARTITIONS; p += 1) {
        const mine = (accepted.get('s') ?? []).filter((n) => Math.floor(n / 1000) === p);
        // in order, and no event twice (no crash happened)
        expect(mine).toEqual(range(p * 1000, PER));
      }
      await until(async () => (holds.every((h) => h.lowest === undefined) ? true : undefined), 20000, 10);
    },
    60000,
  );
});

/** A reader whose openings of `partition` wait for `gate` (the real reader's consumer join takes that long). */
function gatedReader(partition: number, gate: Promise<void>, asked: () => void) {
  return (inner: PartitionReader): PartitionReader => ({
    endOffset: (...a) => inner.endOffset(...a),
    logEnd: (...a) => inner.logEnd(...a),
    startOffset: (...a) => inner.startOffset(...a),
    async open(options, timeoutMs): Promise<PartitionReading> {
      if (options.partition === partition) {
        asked();
        await gate;
      }
      return inner.open(options, timeoutMs);
    },
  });
}

describe('a backlog asked to yield its reading slot after it was resumed keeps its wake-up', () => {
  /*
   * One subscription, three partitions, one reading slot (as 32 readings busy elsewhere in the bridge would leave).
   * P1's backlog (B1) gets the slot; its reading opens (slowly, as a consumer joins) while the lane's head begins
   * failing, so B1 holds the slot and waits for room with nothing of its own in the lane. When the head is
   * delivered, roomIn() resumes the backlogs in partition order: P0's backlog (made by the eviction) finds no slot
   * and ReadingSlots asks the idler B1 to yield, by microtask; then B1 itself is resumed (its wait ends, roomWanted
   * is spent). The yield runs first and stops B1's reading for good: B1 is in no slot queue, the lane wants no room,
   * and the group consumer passes P1's events by (takes() is false). P1's events are never delivered and its
   * commit hold never moves, although the endpoint answers 204.
   */
  test('every event of the subscription is delivered once its endpoint answers again', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let p1Asked = false;
    const { publisher, view, bridge, agent, accepted, refused, attempts } = setup(
      2,
      20,
      gatedReader(1, gate, () => (p1Asked = true)),
    );
    // The bridge's 32 slots, as if 31 other readings held theirs (replaced before any backlog exists).
    (bridge as unknown as { readingSlots: ReadingSlots }).readingSlots = new ReadingSlots(1);
    view.set('s', orderSubscription('s'));
    const signal = owned().signal;
    const holds = [new FakeCommitHolds(), new FakeCommitHolds(), new FakeCommitHolds()];
    const p0 = await orderEvents(publisher, { partition: 0, count: 3 });
    const p1 = await orderEvents(publisher, { partition: 1, count: 6 });
    const p2 = await orderEvents(publisher, { partition: 2, count: 2 });
    // P0's second event fails until told otherwise: the lane's head begins failing after P1's reading was asked for.
    refused.add(1);
    const handling: Promise<void>[] = [];
    const admitted = () => new Promise((r) => setImmediate(r));
    // P0's first event is the lane's head, the next two fill its buffer; all of P1's go to P1's backlog (B1).
    for (const r of p0) handling.push(bridge.onEvent(r, signal, holds[0].holdCommit));
    await admitted();
    for (const r of p1) handling.push(bridge.onEvent(r, signal, holds[1].holdCommit));
    await admitted();
    await until(
      async () => (p1Asked && attempts() >= 3 ? true : undefined),
      20000,
      1,
      'P1 reading asked, head failing',
    );
    // While the head fails: P2's events find no room, and P1's reading opens and waits for room with the slot.
    for (const r of p2) handling.push(bridge.onEvent(r, signal, holds[2].holdCommit));
    release();
    await new Promise((r) => setTimeout(r, 20));
    refused.delete(1);
    await Promise.all(handling);
    try {
      await until(async () => ((accepted.get('s') ?? []).length >= 11 ? true : undefined), 20000, 5);
    } catch (err) {
      // What arrived, and which commits are still held, when it did not all arrive.
      console.log({ got: accepted.get('s') ?? [], held: holds.map((h) => h.lowest) });
      throw err;
    } finally {
      await agent.close();
    }
    const got = accepted.get('s') ?? [];
    expect(got.filter((n) => n < 1000)).toEqual([0, 1, 2]);
    expect(got.filter((n) => n >= 1000 && n < 2000)).toEqual(range(1000, 6));
    expect(got.filter((n) => n >= 2000)).toEqual([2000, 2001]);
    await until(async () => (holds.every((h) => h.lowest === undefined) ? true : undefined), 20000, 5);
  }, 90000);
});

describe('a backlog that ends with its subscription while its callbacks are still in the lane', () => {
  /*
   * LaneBacklog.onRecord meets a record after the subscription was cancelled: callbackFor() says 'ended', finish()
   * releases the hold (this.hold = undefined), but callbacks it read before are still queued in the lane (inLane).
   * The lane ends each at once ('done', the subscription is no longer active), and done() calls updateHold(): in
   * the reading state `at` is `next`, there is no hold and no holdCommit, so it throws "no hold can be taken". The
   * throw is inside `exit.then(...)`, whose promise nobody handles: an unhandled rejection, which ends a Node 20
   * process (no handler is installed in src/ or consumers/). The bridge crashes on a plain cancel (the README's own
   * advice for a dead endpoint) and, restarted, redelivers everything since the oldest held offset.
   */
  test('cancelling a subscription whose backlog is feeding its lane raises no error', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => void unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    const { publisher, view, bridge, agent, accepted } = setup(3, 20);
    try {
      view.set('s', orderSubscription('s'));
      const signal = owned().signal;
      const holds = new FakeCommitHolds();
      const records = await orderEvents(publisher, { partition: 0, count: 30 });
      const handling = records.map((r) => bridge.onEvent(r, signal, holds.holdCommit));
      // The backlog reads and feeds the lane (slow receiver, buffer of 3).
      await until(async () => ((accepted.get('s') ?? []).length >= 6 ? true : undefined), 20000, 2);
      view.set('s', { ...orderSubscription('s'), status: 'cancelled' });
      await Promise.all(handling);
      await until(async () => (holds.lowest === undefined ? true : undefined), 20000, 5, 'every hold released');
      await new Promise((r) => setTimeout(r, 100));
      expect(unhandled.map((e) => String(e))).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await agent.close();
    }
  });
});

describe('an eviction whose first callback of a partition is from a handed-back owner', () => {
  /*
   * CallbackBridge.evicted() takes, per partition, the first job let go and skips the partition when that job's
   * signal is not the partition's current one (handed back). But the jobs behind it may be the current owner's: a
   * partition handed back and taken again by this process (a restarted group member, or a revocation undone by the
   * next rebalance) offers its events again while the old owner's callbacks still wait in the lane behind a head on
   * the wire. When that head fails, the current owner's callbacks are resolved 'evicted' with no backlog made and
   * no hold taken: their records finish, the group commits past them, and the subscription never gets them.
   */
  test('callbacks of the current owner let go by a failing head are read again and delivered', async () => {
    const { publisher, view, bridge, agent, accepted, down, attempts } = setup(5, 100);
    view.set('s', orderSubscription('s'));
    down.add('s');
    const holds = new FakeCommitHolds();
    const records = await orderEvents(publisher, { partition: 0, count: 3 });
    const first = owned();
    // The first owner: the head (event 0) goes on the wire and is answered 503 after 100 ms; event 1 waits behind.
    const old = records
      .slice(0, 2)
      .map((r) => bridge.onEvent(r, first.signal, holds.holdCommit).catch(() => 'stopped'));
    await until(async () => (attempts() === 1 ? true : undefined), 20000, 1);
    // Handed back, and taken again at once from the committed offset (nothing was committed): events 0, 1, 2 again.
    first.abort(new Error('revoked'));
    const again = owned();
    let finished = 0;
    const current = records.map((r) => bridge.onEvent(r, again.signal, holds.holdCommit).then(() => (finished += 1)));
    // The old head is answered 503 (100 ms after it was sent): its lane lets go of everything queued behind it.
    await new Promise((r) => setTimeout(r, 200));
    down.delete('s');
    await Promise.all(old);
    try {
      await until(async () => ((accepted.get('s') ?? []).length >= 3 ? true : undefined), 20000, 5);
    } catch (err) {
      console.log({ accepted: accepted.get('s'), finished, held: holds.lowest });
      throw err;
    } finally {
      await agent.close();
    }
    await Promise.all(current);
    expect(accepted.get('s')).toEqual([0, 1, 2]);
  });
});

describe('a reader that restarts while its record waits for room in the lane', () => {
  /*
   * PartitionReader replaces a consumer kafkajs gave up on, from the record it was handing over: that record is
   * offered again while the first offer may still wait for lane room. The crashed consumer's loop keeps waiting for
   * its offer (heartbeating a consumer that is gone) until the offer settles. Here every record is offered twice at
   * once, the first offer left behind as the crashed consumer's.
   */
  test('each event is delivered once and in order, and the offer left behind settles', async () => {
    const offers: Promise<void>[] = [];
    const restartingOnEveryRecord = (reader: PartitionReader): PartitionReader => ({
      endOffset: (topic, partition, timeoutMs) => reader.endOffset(topic, partition, timeoutMs),
      logEnd: (topic, partition, timeoutMs) => reader.logEnd(topic, partition, timeoutMs),
      startOffset: (topic, partition, timeoutMs) => reader.startOffset(topic, partition, timeoutMs),
      open: (options, timeoutMs) =>
        reader.open(
          {
            ...options,
            onRecord: (record) => {
              offers.push(Promise.resolve(options.onRecord(record)));
              const again = Promise.resolve(options.onRecord(record));
              offers.push(again);
              return again;
            },
          },
          timeoutMs,
        ),
    });
    const { publisher, view, bridge, agent, accepted, reader } = setup(2, 2, restartingOnEveryRecord);
    view.set('s', orderSubscription('s'));
    const holds = new FakeCommitHolds();
    const records = await orderEvents(publisher, { count: 30 });
    const signal = owned().signal;
    await Promise.all(records.map((r) => bridge.onEvent(r, signal, holds.holdCommit)));
    await until(async () => ((accepted.get('s') ?? []).length >= 30 ? true : undefined), 20000, 5);
    expect(accepted.get('s')).toEqual(range(0, 30));
    // The backlog read the events the lane had no room for (two offers each), and the offers waited for room.
    expect(offers.length).toBeGreaterThanOrEqual(2 * 20);
    let settled = 0;
    for (const offer of offers) void offer.then(() => (settled += 1));
    await until(async () => (settled === offers.length ? true : undefined), 20000, 5);
    expect(reader.openReadings).toBe(0);
    await agent.close();
  });
});
