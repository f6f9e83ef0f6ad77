import { createHash } from 'node:crypto';
import { MockAgent } from 'undici';
import { callbackBody, parseEvent, webhookId } from '../../consumers/callback-bridge/bridge-event';
import { createLogger } from '../../src/logger';
import { bridgeOnFakes } from './bridge-fixture';
import { FakeCommitHolds, FakePublisher, FakeView } from './fakes';
import type { IncomingRecord } from '../../src/kafka/types';
import { KeyedSerial } from '../../src/lib/keyed-serial';
import type { Subscription } from '../../src/subscriptions/subscription';

const record = (partition: number, offset: number, fields: Partial<IncomingRecord> = {}): IncomingRecord => ({
  topic: 'events',
  partition,
  offset: String(offset),
  key: 't1',
  value: '{}',
  headers: {},
  timestamp: '1000',
  ...fields,
});

/** A step that finishes only when released, recording when it starts. */
function gate(started: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  return { step: () => (started.push(name), done.then(() => name)), release };
}

describe('KeyedSerial (the bridge admits by partition, the runner runs by task, the resource store changes by resource)', () => {
  test('a key runs its steps one after another, in the order given', async () => {
    const admission = new KeyedSerial();
    const started: string[] = [];
    const a = gate(started, 'p0:0');
    const b = gate(started, 'p0:1');
    const first = admission.run('p0', a.step);
    const second = admission.run('p0', b.step);
    await Promise.resolve();
    expect(started).toEqual(['p0:0']);
    a.release();
    await expect(first).resolves.toBe('p0:0');
    b.release();
    await expect(second).resolves.toBe('p0:1');
    expect(started).toEqual(['p0:0', 'p0:1']);
  });

  test('other keys are not held by a slow one, and a failed step does not stop the next', async () => {
    const admission = new KeyedSerial();
    const started: string[] = [];
    const slow = gate(started, 'p0:0');
    void admission.run('p0', slow.step);
    await expect(admission.run('p1', async () => 'p1:0')).resolves.toBe('p1:0');
    const failed = admission.run('p2', async () => Promise.reject(new Error('sync failed')));
    await expect(failed).rejects.toThrow('sync failed');
    await expect(admission.run('p2', async () => 'p2:1')).resolves.toBe('p2:1');
    slow.release();
    await new Promise((r) => setImmediate(r));
    expect(admission.busy).toBe(0);
  });

  test('runOver: a step over several keys comes after every earlier step on any of them, before later ones', async () => {
    const changes = new KeyedSerial();
    const started: string[] = [];
    const a = gate(started, 'a');
    const b = gate(started, 'b');
    const ab = gate(started, 'ab');
    const after = gate(started, 'a again');
    const ran = [changes.run('a', a.step), changes.run('b', b.step)];
    ran.push(changes.runOver(['a', 'b', 'a'], ab.step), changes.runOver(['a'], after.step));
    const unrelated = changes.runOver(['c'], async () => 'c');
    await expect(unrelated).resolves.toBe('c');
    expect(started).toEqual(['a', 'b']);
    a.release();
    await ran[0];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['a', 'b']);
    b.release();
    await ran[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['a', 'b', 'ab']);
    ab.release();
    after.release();
    await expect(Promise.all(ran)).resolves.toEqual(['a', 'b', 'ab', 'a again']);
    expect(started).toEqual(['a', 'b', 'ab', 'a again']);
    expect(changes.busy).toBe(0);
  });
});

describe('bridge events', () => {
  const sub = { id: 's-1' } as Subscription;

  test('a task event carries its task, tenant and CloudEvents id; its body links the subscription and the task', () => {
    const headers = { ce_type: 'task.progress', ce_id: 'ev-1', ce_tenant: 'acme' };
    const e = parseEvent(record(0, 5, { headers, value: '{"data":{"current":1}}' }), 'events');
    expect(e).toEqual({
      kind: 'task.progress',
      id: 'ev-1',
      time: 1000,
      taskId: 't1',
      tenant: 'acme',
      data: { current: 1 },
    });
    expect(JSON.parse(callbackBody(sub, e!, 'http://api'))).toEqual({
      _links: { self: { href: 'http://api/subscriptions/s-1' }, task: { href: 'http://api/tasks/t1' } },
      UUID: 's-1',
      event: 'task.progress',
      taskId: 't1',
      data: { current: 1 },
    });
  });

  test('a task event written without a tenant matches no tenant; a record that is not JSON is no event', () => {
    expect(parseEvent(record(0, 1, { headers: { ce_type: 'task.output' } }), 'events')?.tenant).toBe('\u0000unknown');
    expect(parseEvent(record(0, 2, { value: 'not json' }), 'events')).toBeUndefined();
    expect(parseEvent(record(0, 3, { value: '{"no":"type"}' }), 'events')).toBeUndefined();
  });

  test('webhook-id is stable per subscription and event, and differs across either', () => {
    expect(webhookId('s-1', 'ev-1')).toBe(webhookId('s-1', 'ev-1'));
    expect(webhookId('s-1', 'ev-1')).not.toBe(webhookId('s-2', 'ev-1'));
    expect(webhookId('s-1', 'ev-1')).not.toBe(webhookId('s-1', 'ev-2'));
    expect(webhookId('s-1', 'ev-1')).toMatch(/^msg_[A-Za-z0-9_-]{27}$/);
    // The same id as every earlier version gave: a redelivery after an upgrade keeps it.
    const digest = createHash('sha256').update('s-1\u0000ev-1').digest('base64url');
    expect(webhookId('s-1', 'ev-1')).toBe(`msg_${digest.slice(0, 27)}`);
  });
});

describe('CallbackBridge.admit: an event is matched against every subscription committed before it was fetched', () => {
  const ORIGIN = 'http://receiver.test';

  function setup() {
    const view = new FakeView<Subscription>();
    const publisher = new FakePublisher();
    const logger = createLogger('silent');
    const agent = new MockAgent();
    agent.disableNetConnect();
    agent.get(ORIGIN).intercept({ path: /.*/, method: 'POST' }).reply(204).persist();
    const bridge = bridgeOnFakes(view, publisher, agent, logger);
    // Made elsewhere just before the event: only a sync of the view brings it in.
    const subscription: Subscription = {
      id: 's1',
      tenant: 't',
      callbackUrl: `${ORIGIN}/hook`,
      mode: 'continuous',
      events: ['order.created'],
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      status: 'active',
      createdAt: new Date(0).toISOString(),
      updatedAt: new Date(0).toISOString(),
    };
    view.commitElsewhere(() => view.set('s1', subscription));
    const receivedAt = Date.now();
    const event = record(0, 7, {
      topic: 'domain-events',
      value: JSON.stringify({ event: 'order.created', resource: '/orders/1', data: {} }),
      receivedAt,
    });
    return { view, bridge, event, receivedAt, agent };
  }

  /** Admits the event; resolves with the syncs it took and the callbacks it made, once they are delivered. */
  async function admitted({ view, bridge, event, agent }: ReturnType<typeof setup>) {
    const deliveries = await bridge.admit(event, new AbortController().signal, new FakeCommitHolds().holdCommit);
    await Promise.all(deliveries);
    await agent.close();
    return { syncs: view.syncs, callbacks: deliveries.length };
  }

  test('a view whose last sync began in the same millisecond as the fetch is synced first', async () => {
    const fixture = setup();
    fixture.view.syncedAt = fixture.receivedAt;
    expect(await admitted(fixture)).toEqual({ syncs: 1, callbacks: 1 });
  });

  test('a view whose last sync began after the fetch is not synced again', async () => {
    const fixture = setup();
    // A sync that began after the fetch (a millisecond later) brought the subscription in.
    await fixture.view.syncedSince(fixture.receivedAt + 1);
    // Dated an hour on, so it also stays within the lanes' subscriptions lease (100 ms) for the whole test: with both
    // cores busy, more than half a lease passed before the callback, and the lane's own sync (a later check, not the
    // one this test is about) was counted.
    fixture.view.syncedAt = fixture.receivedAt + 3_600_000;
    fixture.view.syncs = 0;
    expect(await admitted(fixture)).toEqual({ syncs: 0, callbacks: 1 });
  });

  test('a handed-back event is not admitted', async () => {
    const { bridge, event, agent } = setup();
    const handBack = new AbortController();
    handBack.abort();
    expect(await bridge.admit(event, handBack.signal, new FakeCommitHolds().holdCommit)).toEqual([]);
    await agent.close();
  });
});
