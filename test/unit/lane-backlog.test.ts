import { getEventListeners } from 'node:events';
import { until } from '../support/until';
import { TOPIC, orderEvents, orderSubscription, range } from './order-events';
import { FakeCommitHolds } from './fakes';
import { backlogBridge, partitionOwnership } from './backlog-bridge';
import type { BacklogCursor } from '../../src/subscriptions/backlog-cursor';

/*
 * A lane holds a bounded number of callbacks; what it has no room for (its buffer is full, or its head is failing)
 * is read again from Kafka once it has room (consumers/callback-bridge/lane-backlog.ts). Here with the project's own
 * fakes: the publisher's log is the partition the backlog reads, undici's MockAgent the receivers, and the commit
 * holds are counted as the group consumer keeps them. The group consumer is played as kafkajs drives it: every record
 * handed over in order, without waiting for the last one's callbacks.
 */

// Each wait below allows 20 s: it ends as soon as its condition holds, and 5 s was once too short with both cores busy.

/** every test's partition, handed back when it ends (as a stop does): its backlogs and cursor writers stop */
const owned = partitionOwnership();

function setup(laneBuffer: number, delayMs = 0, concurrency = laneBuffer) {
  const handBack = owned();
  return { ...backlogBridge({ laneBuffer, delayMs, concurrency }), signal: handBack.signal, handBack };
}

const cursorOf = (cursors: { get(key: string): BacklogCursor | undefined }, sub: string) =>
  cursors.get(`${sub}/${TOPIC}/0`);

describe('lane backlogs: a dead endpoint holds one event of the bridge, and gets every event later, in order', () => {
  test('a subscription whose endpoint is down keeps no other waiting, nor the commit: its cursor is in Kafka', async () => {
    const { publisher, view, cursors, bridge, agent, accepted, down, signal, attempts } = setup(2);
    view.set('dead', orderSubscription('dead'));
    view.set('healthy', orderSubscription('healthy'));
    down.add('dead');
    const holds = new FakeCommitHolds();
    const records = await orderEvents(publisher, { count: 30 });
    const handled = records.map(() => false);
    records.forEach((r, i) => void bridge.onEvent(r, signal, holds.holdCommit).then(() => (handled[i] = true)));

    await until(async () => ((accepted.get('healthy') ?? []).length === 30 ? true : undefined), 20000, 5);
    expect(accepted.get('healthy')).toEqual(range(0, 30));
    // Every record is finished, the dead lane's head too (its backlog took it over): the group consumer may commit
    // past them all once the backlog's cursor is written; a hold keeps the commit at the head until then.
    await until(async () => (handled.every(Boolean) ? true : undefined), 20000, 5);
    await until(async () => (holds.lowest === undefined ? true : undefined), 20000, 5);
    expect(cursorOf(cursors, 'dead')).toMatchObject({ from: records[0].offset });
    const tried = attempts();
    await until(async () => (attempts() > tried + 3 ? true : undefined), 20000, 5);
    expect(accepted.get('dead')).toBeUndefined();
    // What the consumer lag no longer shows (the commit went past) the backlog metric does: its events to read again.
    const unread = (sub: string) =>
      bridge
        .backlogs()
        .filter((b) => b.subscription === sub && b.topic === TOPIC && b.partition === 0)
        .reduce((sum, b) => sum + b.lag, 0);
    expect(unread('dead')).toBeGreaterThanOrEqual(28);
    expect(unread('healthy')).toBe(0);

    down.delete('dead');
    await until(async () => ((accepted.get('dead') ?? []).length >= 30 ? true : undefined), 20000, 5);
    expect(accepted.get('dead')).toEqual(range(0, 30));
    // Delivered: the cursor is removed (after its linger), and nothing holds the commit.
    await until(async () => (cursorOf(cursors, 'dead') === undefined ? true : undefined), 20000, 20);
    expect(holds.lowest).toBeUndefined();
    expect(unread('dead')).toBe(0);
    await agent.close();
  });

  test('a bridge that takes the partition over reads the backlog from its cursor; the others get no repeats', async () => {
    const { publisher, view, cursors, bridge, newBridge, agent, accepted, down, handBack } = setup(2);
    view.set('dead', orderSubscription('dead'));
    view.set('healthy', orderSubscription('healthy'));
    down.add('dead');
    const holds = new FakeCommitHolds();
    const first = await orderEvents(publisher, { count: 20 });
    first.forEach((r) => void bridge.onEvent(r, handBack.signal, holds.holdCommit).catch(() => undefined));
    await until(async () => ((accepted.get('healthy') ?? []).length === 20 ? true : undefined), 20000, 5);
    await until(async () => (cursorOf(cursors, 'dead') && holds.lowest === undefined ? true : undefined), 20000, 5);
    // The bridge crashes (its partition handed back); the group consumer had committed past all 20 records.
    handBack.abort(new Error('crashed'));
    down.delete('dead');
    const next = newBridge();
    const takeOver = new AbortController();
    const later = await orderEvents(publisher, { count: 5, first: 20 });
    await Promise.all(later.map((r) => next.onEvent(r, takeOver.signal, new FakeCommitHolds().holdCommit)));
    await until(async () => ((accepted.get('dead') ?? []).length >= 25 ? true : undefined), 20000, 5);
    expect(accepted.get('dead')).toEqual(range(0, 25));
    expect(accepted.get('healthy')).toEqual(range(0, 25));
    takeOver.abort(new Error('test over'));
    await agent.close();
  });

  test('a full buffer sends the rest to the backlog; events after it is given back come from the group consumer', async () => {
    // A receiver slower than the group consumer hands events over, as on a busy partition: the buffer fills.
    const { publisher, view, reader, bridge, agent, accepted, signal } = setup(3, 2);
    view.set('s', orderSubscription('s'));
    const holds = new FakeCommitHolds();
    const readFrom: string[] = [];
    reader.opened.add((o) => readFrom.push(o.fromOffset));
    const first = await orderEvents(publisher, { count: 40 });
    await Promise.all(first.map((r) => bridge.onEvent(r, signal, holds.holdCommit)));
    await until(async () => ((accepted.get('s') ?? []).length === 40 ? true : undefined), 20000, 5);
    await until(async () => (reader.openReadings === 0 && holds.lowest === undefined ? true : undefined), 20000, 5);
    const second = await orderEvents(publisher, { count: 5, first: 40 });
    await Promise.all(second.map((r) => bridge.onEvent(r, signal, holds.holdCommit)));
    await until(async () => ((accepted.get('s') ?? []).length === 45 ? true : undefined), 20000, 5);
    expect(accepted.get('s')).toEqual(range(0, 45));
    // The lane took the first events in memory, and the backlog read the rest once, from where the buffer was full.
    expect(readFrom.length).toBeGreaterThanOrEqual(1);
    expect(BigInt(readFrom[0])).toBeGreaterThan(BigInt(first[0].offset));
    expect(reader.openReadings).toBe(0);
    await agent.close();
  });

  test.each([
    ['cancelled', { ...orderSubscription('dead'), status: 'cancelled' as const, cancelReason: 'requested' as const }],
    ['forgotten (tombstoned by the retention sweep)', undefined],
  ])(
    'a backlog ends when its subscription is %s, with no record left to tell it: no cursor, no hold, no lag',
    async (_how, ended) => {
      const { publisher, view, cursors, bridge, agent, down, signal } = setup(2);
      view.set('dead', orderSubscription('dead'));
      down.add('dead');
      const holds = new FakeCommitHolds();
      const records = await orderEvents(publisher, { count: 10 });
      records.forEach((r) => void bridge.onEvent(r, signal, holds.holdCommit).catch(() => undefined));
      await until(async () => (cursorOf(cursors, 'dead') ? true : undefined), 20000, 5);
      const lag = () => bridge.backlogs().filter((b) => b.subscription === 'dead');
      expect(lag().length).toBe(1);
      // Cancelled while its endpoint is still down, and no event comes after: only the cancel can end the backlog.
      view.set('dead', ended);
      await until(async () => (lag().length === 0 ? true : undefined), 20000, 5);
      await until(async () => (cursorOf(cursors, 'dead') === undefined ? true : undefined), 20000, 20);
      await until(async () => (holds.lowest === undefined ? true : undefined), 20000, 5);
      await agent.close();
    },
  );

  test('a backlog that finishes lets go of the partition: backlog after backlog, the hand-back signal holds none', async () => {
    const { publisher, topics, view, reader, bridge, agent, accepted, signal } = setup(3, 2);
    view.set('s', orderSubscription('s'));
    const holds = new FakeCommitHolds();
    let opened = 0;
    reader.opened.add(() => (opened += 1));
    const abortListeners = () => getEventListeners(signal, 'abort').length;
    const written = () => publisher.published.filter((r) => r.topic.endsWith('deliveries')).length;
    const cursorWrites = () => publisher.published.filter((r) => r.topic === topics.callbackBacklogs);
    let steady: number | undefined;
    for (let round = 0; round < 4; round += 1) {
      const cursorsBefore = cursorWrites().length;
      const records = await orderEvents(publisher, { count: 40, first: round * 40 });
      await Promise.all(records.map((r) => bridge.onEvent(r, signal, holds.holdCommit)));
      const total = (round + 1) * 40;
      await until(async () => ((accepted.get('s') ?? []).length === total ? true : undefined), 20000, 5);
      await until(async () => (reader.openReadings === 0 && holds.lowest === undefined ? true : undefined), 20000, 5);
      // A job lets go of the signal once its attempt is in the history, which is written in batches after the
      // callback was answered: counted once every attempt is written, the partition's own listener is left.
      await until(async () => (written() >= total ? true : undefined), 20000, 5);
      // The cursor writer waits on the signal while it lingers before a write: counted once the backlog's cursor
      // is removed (its last write), or a count taken while one lingers is never seen again (CI, both cores busy).
      const cursorRemoved = async () => {
        const writes = cursorWrites();
        return writes.length > cursorsBefore && writes[writes.length - 1].value === null ? true : undefined;
      };
      await until(cursorRemoved, 20000, 5);
      steady ??= abortListeners();
      // The same after every backlog: one listener left per finished backlog would never get back to it.
      await until(async () => (abortListeners() === steady ? true : undefined), 20000, 5);
    }
    expect(accepted.get('s')).toEqual(range(0, 160));
    // Every round overflowed the lane, so every round had a backlog of its own, which finished.
    expect(opened).toBeGreaterThanOrEqual(4);
    await agent.close();
  });

  test('a handed-back partition ends its backlogs: no reading is left open, and nothing is read again here', async () => {
    const { publisher, view, reader, bridge, agent, down, handBack } = setup(1);
    view.set('dead', orderSubscription('dead'));
    down.add('dead');
    const holds = new FakeCommitHolds();
    const records = await orderEvents(publisher, { count: 10 });
    const handling = records.map((r) => bridge.onEvent(r, handBack.signal, holds.holdCommit).catch(() => undefined));
    await until(async () => (holds.lowest !== undefined ? true : undefined), 20000, 5);
    down.delete('dead');
    handBack.abort(new Error('revoked'));
    await Promise.all(handling);
    expect(reader.openReadings).toBe(0);
    await agent.close();
  });
  test('while the bridge has budget to spare, a healthy lane takes a burst in memory, past its buffer', async () => {
    const { publisher, view, reader, bridge, agent, accepted, signal } = setup(3, 2, 1000);
    view.set('s', orderSubscription('s'));
    const holds = new FakeCommitHolds();
    let readings = 0;
    reader.opened.add(() => (readings += 1));
    const records = await orderEvents(publisher, { count: 40 });
    await Promise.all(records.map((r) => bridge.onEvent(r, signal, holds.holdCommit)));
    expect(accepted.get('s')).toEqual(range(0, 40));
    expect(readings).toBe(0);
    expect(holds.lowest).toBeUndefined();
    await agent.close();
  });

  /*
   * An endpoint slower than its events come is not failing, so its lane queued on past its buffer from the bridge's
   * spare budget: minutes of events in memory, and with them its partition's commit. A bridge's successor then sent
   * every other subscription those minutes again, past what the delivery history remembers (an audit: 752 repeats).
   * Keeping to its buffer is not enough: a buffer's worth of slow answers (100 at 2 s) held the commit for minutes too.
   */
  test('a slow lane that falls behind lets what holds the commit go to Kafka: the commit moves on', async () => {
    const handBack = owned();
    const { signal } = handBack;
    const laneBuffer = 50;
    const { publisher, view, cursors, bridge, agent, accepted } = backlogBridge({
      laneBuffer,
      delayMs: 30,
      concurrency: 1000,
      laneBehindMs: 200,
    });
    view.set('slow', orderSubscription('slow'));
    const holds = new FakeCommitHolds();
    const records = await orderEvents(publisher, { count: 100 });
    const handled = records.map(() => false);
    records.forEach((r, i) => void bridge.onEvent(r, signal, holds.holdCommit).then(() => (handled[i] = true)));

    // Every record is finished and nothing holds the commit long before even the lane's buffer is delivered: the lane
    // let its events go to a backlog, whose cursor is in Kafka.
    await until(async () => (handled.every(Boolean) && holds.lowest === undefined ? true : undefined), 20000, 5);
    expect((accepted.get('slow') ?? []).length).toBeLessThan(laneBuffer);
    expect(cursorOf(cursors, 'slow')).toBeDefined();
    // And each is delivered once, in order: what the lane kept, then what the backlog reads again.
    await until(async () => ((accepted.get('slow') ?? []).length >= 100 ? true : undefined), 20000, 5);
    expect(accepted.get('slow')).toEqual(range(0, 100));
    await agent.close();
  });
});
