import { MockAgent, type Agent } from 'undici';
import { CallbackBridge } from '../../consumers/callback-bridge/callback-bridge';
import type { IncomingRecord } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import type { Subscription } from '../../src/subscriptions/subscription';
import { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import { until } from '../support/until';
import { FakeCommitHolds, FakePartitionReader, FakePublisher, FakeView } from './fakes';

/*
 * A lane holds a bounded number of callbacks; what it has no room for (its buffer is full, or its head is failing)
 * is read again from Kafka once it has room (consumers/callback-bridge/lane-backlog.ts). Here with the project's own
 * fakes: the publisher's log is the partition the backlog reads, undici's MockAgent the receivers, and the commit
 * holds are counted as the group consumer keeps them. The group consumer is played as kafkajs drives it: every record
 * handed over in order, without waiting for the last one's callbacks.
 */
const ORIGIN = 'http://receiver.test';
const TOPIC = 'domain-events';

function subscription(id: string): Subscription {
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

function setup(laneBuffer: number, delayMs = 0) {
  const publisher = new FakePublisher();
  const view = new FakeView<Subscription>();
  // Synced long after every event here: matching needs no sync, and every lane is within its lease.
  view.syncedAt = Date.now() + 3600000;
  const agent = new MockAgent();
  agent.disableNetConnect();
  const reader = new FakePartitionReader(publisher);
  const logger = createLogger('silent');
  const bridge = new CallbackBridge(
    {
      runGroupConsumer: () => Promise.reject(new Error('not used here')),
      reader,
      publisher,
      topics: { taskEvents: 'task-events', domainEvents: TOPIC, deliveries: 'deliveries', callbackDeadLetters: 'dlq' },
      subscriptions: new SubscriptionStore({ view, publisher, topic: 'subs', timeoutMs: 1000 }),
      groupId: 'bridge',
      allowPrivate: true,
      concurrency: 1000,
      callbacks: { timeoutMs: 1000, maxAttempts: 1000, backoffBaseMs: 1, backoffMaxMs: 5, laneBuffer },
      kafkaTimeoutMs: 1000,
      logger,
    },
    agent as unknown as Agent,
    logger,
  );
  /** per subscription: the order numbers its receiver accepted, in the order they came */
  const accepted = new Map<string, number[]>();
  /** per subscription: whether its receiver answers 503 */
  const down = new Set<string>();
  let attempts = 0;
  const interceptor = agent
    .get(ORIGIN)
    .intercept({ path: /.*/, method: 'POST' })
    .reply((opts) => {
      attempts += 1;
      const id = String(opts.path).slice(1);
      if (down.has(id)) return { statusCode: 503 };
      const n = Number(JSON.parse(String(opts.body)).data.n);
      accepted.set(id, [...(accepted.get(id) ?? []), n]);
      return { statusCode: 204 };
    });
  (delayMs > 0 ? interceptor.delay(delayMs) : interceptor).persist();
  return { publisher, view, reader, bridge, agent, accepted, down, attempts: () => attempts };
}

/** `count` order.created events on partition 0, committed to the fake log, as the group consumer hands them over. */
async function events(publisher: FakePublisher, count: number, first = 0): Promise<IncomingRecord[]> {
  const records = Array.from({ length: count }, (_, i) => ({
    topic: TOPIC,
    key: `o${first + i}`,
    partition: 0,
    value: JSON.stringify({ event: 'order.created', resource: `/orders/${first + i}`, data: { n: first + i } }),
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

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe('lane backlogs: a dead endpoint holds one event of the bridge, and gets every event later, in order', () => {
  test('a subscription whose endpoint is down does not keep the others waiting; the commit waits for it', async () => {
    const { publisher, view, bridge, agent, accepted, down, attempts } = setup(2);
    view.set('dead', subscription('dead'));
    view.set('healthy', subscription('healthy'));
    down.add('dead');
    const holds = new FakeCommitHolds();
    const signal = new AbortController().signal;
    const records = await events(publisher, 30);
    const handled = records.map(() => false);
    records.forEach((r, i) => void bridge.onEvent(r, signal, holds.holdCommit).then(() => (handled[i] = true)));

    await until(async () => ((accepted.get('healthy') ?? []).length === 30 ? true : undefined), 5000, 5);
    expect(accepted.get('healthy')).toEqual(range(0, 30));
    // Only the dead lane's head is still being handled; every other record is finished, its callbacks delivered
    // or passed to the backlog, and the commit is held at the first event the dead lane let go.
    await until(async () => (handled.filter(Boolean).length === 29 ? true : undefined), 5000, 5);
    expect(handled[0]).toBe(false);
    expect(holds.lowest).toBe(BigInt(records[1].offset));
    const tried = attempts();
    await until(async () => (attempts() > tried + 3 ? true : undefined), 5000, 5);
    expect(accepted.get('dead')).toBeUndefined();

    down.delete('dead');
    await until(async () => ((accepted.get('dead') ?? []).length >= 30 ? true : undefined), 5000, 5);
    expect(accepted.get('dead')).toEqual(range(0, 30));
    await until(async () => (handled[0] ? true : undefined), 5000, 5);
    // Everything delivered and the partition given back: nothing holds the commit.
    await until(async () => (holds.lowest === undefined ? true : undefined), 5000, 5);
    await agent.close();
  });

  test('a full buffer sends the rest to the backlog; events after it is given back come from the group consumer', async () => {
    // A receiver slower than the group consumer hands events over, as on a busy partition: the buffer fills.
    const { publisher, view, reader, bridge, agent, accepted } = setup(3, 2);
    view.set('s', subscription('s'));
    const holds = new FakeCommitHolds();
    const signal = new AbortController().signal;
    const readFrom: string[] = [];
    reader.opened.add((o) => readFrom.push(o.fromOffset));
    const first = await events(publisher, 40);
    await Promise.all(first.map((r) => bridge.onEvent(r, signal, holds.holdCommit)));
    await until(async () => ((accepted.get('s') ?? []).length === 40 ? true : undefined), 5000, 5);
    await until(async () => (reader.openReadings === 0 && holds.lowest === undefined ? true : undefined), 5000, 5);
    const second = await events(publisher, 5, 40);
    await Promise.all(second.map((r) => bridge.onEvent(r, signal, holds.holdCommit)));
    await until(async () => ((accepted.get('s') ?? []).length === 45 ? true : undefined), 5000, 5);
    expect(accepted.get('s')).toEqual(range(0, 45));
    // The lane took the first events in memory, and the backlog read the rest once, from where the buffer was full.
    expect(readFrom.length).toBeGreaterThanOrEqual(1);
    expect(BigInt(readFrom[0])).toBeGreaterThan(BigInt(first[0].offset));
    expect(reader.openReadings).toBe(0);
    await agent.close();
  });

  test('a handed-back partition ends its backlogs: no reading is left open, and nothing is read again here', async () => {
    const { publisher, view, reader, bridge, agent, down } = setup(1);
    view.set('dead', subscription('dead'));
    down.add('dead');
    const holds = new FakeCommitHolds();
    const handBack = new AbortController();
    const records = await events(publisher, 10);
    const handling = records.map((r) => bridge.onEvent(r, handBack.signal, holds.holdCommit).catch(() => undefined));
    await until(async () => (holds.lowest !== undefined ? true : undefined), 5000, 5);
    down.delete('dead');
    handBack.abort(new Error('revoked'));
    await Promise.all(handling);
    expect(reader.openReadings).toBe(0);
    await agent.close();
  });
});
