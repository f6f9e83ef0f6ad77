import { callbackBody, parseEvent, webhookId } from '../../consumers/callback-bridge/bridge-event';
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

describe('KeyedSerial (the bridge admits by partition, the runner runs by task)', () => {
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
  });
});
