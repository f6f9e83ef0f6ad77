import { MockAgent } from 'undici';
import { handsOn, onceCallbackRecord, parseOnceCallback } from '../../consumers/callback-bridge/once-callbacks';
import type { CallbackParts } from '../../consumers/callback-bridge/lane-job';
import type { IncomingRecord, OutgoingRecord } from '../../src/kafka/types';
import { MAX_SEND_BYTES } from '../../src/kafka/record-size';
import { createLogger } from '../../src/logger';
import type { Subscription } from '../../src/subscriptions/subscription';
import { bridgeOnFakes } from './bridge-fixture';
import { FakeCommitHolds, FakePublisher, FakeView } from './fakes';

/*
 * A `once` subscription to event kinds is decided by one bridge: the bridge that reads a matching event hands the
 * callback on to the once-callbacks topic, keyed by the subscription, and the owner of that partition sends it. The
 * pieces without Kafka; test/faults/once-several-bridges.test.ts counts the callbacks with three real bridges.
 */
const ONCE = 'once-callbacks';
const ORIGIN = 'http://receiver.test';

const parts: CallbackParts = {
  subscriptionId: 's1',
  webhookId: 'msg_abc',
  event: 'order.created',
  taskId: undefined,
  // Quotes, a backslash and non-ASCII: the record's value is the body as sent, byte for byte.
  body: '{"UUID":"s1","data":{"note":"\\"naïve\\" ✓"}}',
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  handOn: undefined,
};

/** A written record as a consumer reads it back. */
function readBack(r: OutgoingRecord, offset = 0): IncomingRecord {
  return { ...r, partition: 0, offset: String(offset), headers: r.headers ?? {}, timestamp: '1' };
}

describe('the once-callbacks record', () => {
  test('carries the callback to the deciding bridge as it is, keyed by its subscription', () => {
    const record = onceCallbackRecord(ONCE, parts);
    expect(record).toMatchObject({ topic: ONCE, key: 's1', value: parts.body });
    expect(parseOnceCallback(readBack(record))).toEqual(parts);
    const forTask = { ...parts, taskId: 't-9', traceparent: undefined };
    expect(parseOnceCallback(readBack(onceCallbackRecord(ONCE, forTask)))).toEqual(forTask);
  });

  test('a record this service did not write hands nothing on', () => {
    const record = readBack(onceCallbackRecord(ONCE, parts));
    expect(parseOnceCallback({ ...record, headers: {} })).toBeUndefined();
    expect(parseOnceCallback({ ...record, key: 'another' })).toBeUndefined();
    expect(parseOnceCallback({ ...record, value: null })).toBeUndefined();
    const { hs_webhook_id: _dropped, ...withoutId } = record.headers;
    expect(parseOnceCallback({ ...record, headers: withoutId })).toBeUndefined();
  });

  test('one that Kafka would not take is not handed on (its reader sends it): never retried for ever', () => {
    expect(handsOn(ONCE, parts)).toBe(true);
    expect(handsOn(ONCE, { ...parts, body: 'x'.repeat(MAX_SEND_BYTES) })).toBeUndefined();
  });
});

describe('CallbackBridge: a once subscription to event kinds is sent by one bridge', () => {
  function subscription(id: string, mode: Subscription['mode'], more: Partial<Subscription> = {}): Subscription {
    return {
      id,
      tenant: 't',
      callbackUrl: `${ORIGIN}/${id}`,
      mode,
      events: ['order.created'],
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      status: 'active',
      createdAt: new Date(0).toISOString(),
      updatedAt: new Date(0).toISOString(),
      ...more,
    };
  }

  function setup() {
    const view = new FakeView<Subscription>();
    // The subscriptions the bridge writes (a once subscription's end) reach its view, as Kafka would bring them.
    const publisher = new FakePublisher((records) => {
      for (const r of records) if (r.topic === 'subs' && r.value) view.set(r.key, JSON.parse(r.value));
    });
    const logger = createLogger('silent');
    const agent = new MockAgent();
    agent.disableNetConnect();
    const posts: { path: string; webhookId: string; body: string }[] = [];
    agent
      .get(ORIGIN)
      .intercept({ path: /.*/, method: 'POST' })
      .reply(204, (opts) => {
        const headers = opts.headers as Record<string, string>;
        posts.push({ path: opts.path, webhookId: headers['webhook-id'], body: String(opts.body) });
        return '';
      })
      .persist();
    const bridge = bridgeOnFakes(view, publisher, agent, logger);
    // Fresh for the whole test: no sync is what is tested here.
    view.syncedAt = Date.now() + 3_600_000;
    const admit = async (r: IncomingRecord) => {
      const deliveries = await bridge.admit(r, new AbortController().signal, new FakeCommitHolds().holdCommit);
      await Promise.all(deliveries);
    };
    return { view, publisher, admit, posts, agent };
  }

  const event = (offset: number): IncomingRecord => ({
    topic: 'domain-events',
    partition: 1,
    offset: String(offset),
    key: `orders/${offset}`,
    value: JSON.stringify({ event: 'order.created', resource: `/orders/${offset}`, data: { n: offset } }),
    headers: {},
    timestamp: '1000',
    receivedAt: Date.now(),
  });

  test('the bridge reading the event hands the once callback on, and sends the continuous one itself', async () => {
    const { view, publisher, admit, posts, agent } = setup();
    view.set('once', subscription('once', 'once'));
    view.set('all', subscription('all', 'continuous'));
    await admit(event(7));
    expect(posts.map((p) => p.path)).toEqual(['/all']);
    const handed = publisher.log.filter((r) => r.topic === ONCE);
    expect(handed).toHaveLength(1);
    expect(handed[0].key).toBe('once');
    expect(view.get('once')?.status).toBe('active');
    await agent.close();
  });

  test('the deciding bridge sends the first handed on and ends the subscription; the next is not sent', async () => {
    const { view, publisher, admit, posts, agent } = setup();
    view.set('once', subscription('once', 'once'));
    await admit(event(7));
    await admit(event(8));
    const handed = publisher.log.filter((r) => r.topic === ONCE);
    expect(handed).toHaveLength(2);
    expect(posts).toEqual([]);
    for (const r of handed) await admit({ ...readBack(r, Number(r.offset)), topic: ONCE });
    expect(posts).toHaveLength(1);
    expect(posts[0].webhookId).toBe(handed[0].headers?.hs_webhook_id);
    expect(posts[0].body).toBe(handed[0].value);
    expect(view.get('once')).toMatchObject({ status: 'cancelled', cancelReason: 'delivered-once' });
    await agent.close();
  });

  test("a once subscription to a task is sent by the bridge that reads it: a task's events are one partition", async () => {
    const { view, publisher, admit, posts, agent } = setup();
    view.set('task-once', subscription('task-once', 'once', { events: undefined, taskId: 'task-1' }));
    await admit({
      topic: 'task-events',
      partition: 0,
      offset: '3',
      key: 'task-1',
      value: JSON.stringify({ data: { result: {} } }),
      headers: { ce_type: 'task.succeeded', ce_id: 'e-1', ce_tenant: 't' },
      timestamp: '1000',
      receivedAt: Date.now(),
    });
    expect(posts.map((p) => p.path)).toEqual(['/task-once']);
    expect(publisher.log.filter((r) => r.topic === ONCE)).toEqual([]);
    await agent.close();
  });
});
