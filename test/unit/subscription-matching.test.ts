import { wants, type Subscription } from '../../src/subscriptions/subscription';

const createdAt = '2026-11-24T10:00:00.000Z';
const at = (iso: string) => Date.parse(iso);
const base: Subscription = {
  id: 's-1',
  tenant: 't1',
  callbackUrl: 'https://hooks.example.com/x',
  mode: 'continuous',
  secret: 'whsec_x',
  status: 'active',
  createdAt,
  updatedAt: createdAt,
};

describe('which events a subscription wants', () => {
  test('to event kinds: the listed kinds, from its creation on', () => {
    const s = { ...base, events: ['order.created'] };
    expect(wants(s, { kind: 'order.created', time: at('2026-11-24T10:00:01Z') })).toBe(true);
    expect(wants(s, { kind: 'order.updated', time: at('2026-11-24T10:00:01Z') })).toBe(false);
    expect(wants(s, { kind: 'order.created', time: at('2026-11-24T09:59:59Z') })).toBe(false);
  });

  test('to a task: continuous wants all its events, once only its final outcome', () => {
    const continuous = { ...base, taskId: 'task-1' };
    const once = { ...continuous, mode: 'once' as const };
    const event = (kind: string, taskId = 'task-1') => ({ kind, taskId, tenant: 't1', time: 0 });
    expect(wants(continuous, event('task.progress'))).toBe(true);
    expect(wants(continuous, event('task.progress', 'task-2'))).toBe(false);
    expect(
      ['task.progress', 'task.succeeded', 'task.failed', 'task.cancelled'].map((k) => wants(once, event(k))),
    ).toEqual([false, true, true, true]);
  });

  test("never another tenant's task events, and nothing once cancelled", () => {
    const s = { ...base, events: ['task.succeeded'] };
    const time = at('2026-11-24T11:00:00Z');
    expect(wants(s, { kind: 'task.succeeded', tenant: 't2', time })).toBe(false);
    expect(wants(s, { kind: 'task.succeeded', tenant: 't1', time })).toBe(true);
    expect(wants({ ...s, status: 'cancelled' }, { kind: 'task.succeeded', tenant: 't1', time })).toBe(false);
  });
});
