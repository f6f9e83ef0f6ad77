import { EventEmitter } from 'node:events';
import type { Consumer } from 'kafkajs';
import { MembershipLease } from '../../src/kafka/membership-lease';
import { watchMembership } from '../../src/kafka/membership-events';

const SESSION_MS = 10000;
const EVENTS = {
  REQUEST: 'consumer.network.request',
  HEARTBEAT: 'consumer.heartbeat',
  REBALANCING: 'consumer.rebalancing',
  CRASH: 'consumer.crash',
};

/** A stand-in for a kafkajs consumer's instrumentation events, as watchMembership listens to them. */
function fakeConsumer() {
  const emitter = new EventEmitter();
  const consumer = {
    events: EVENTS,
    on: (event: string, listener: (e: unknown) => void) => emitter.on(event, listener),
  } as unknown as Consumer;
  const emit = (event: keyof typeof EVENTS, payload: Record<string, unknown> = {}) =>
    emitter.emit(EVENTS[event], { payload });
  return { consumer, emit };
}

describe('the membership lease fed by kafkajs events', () => {
  test('an answered heartbeat renews it from when its request was queued, not from its later send', () => {
    const { consumer, emit } = fakeConsumer();
    const lease = new MembershipLease();
    watchMembership(consumer, lease);
    lease.joined(0, SESSION_MS);
    emit('REQUEST', { apiName: 'Fetch', createdAt: 9000, sentAt: 9000 });
    emit('REQUEST', { apiName: 'Heartbeat', createdAt: 4000, sentAt: 4500 });
    emit('HEARTBEAT');
    expect(lease.held(4000 + SESSION_MS / 2 - 1)).toBe(true);
    expect(lease.held(4000 + SESSION_MS / 2)).toBe(false);
  });

  test.each(['REBALANCING', 'CRASH'] as const)('%s ends it until the next join', (event) => {
    const { consumer, emit } = fakeConsumer();
    const lease = new MembershipLease();
    watchMembership(consumer, lease);
    lease.joined(Date.now(), SESSION_MS);
    emit(event, { error: new Error('boom'), restart: true });
    expect(lease.held()).toBe(false);
    emit('REQUEST', { apiName: 'Heartbeat', createdAt: Date.now(), sentAt: Date.now() });
    emit('HEARTBEAT');
    expect(lease.held()).toBe(false);
    lease.joined(Date.now(), SESSION_MS);
    expect(lease.held()).toBe(true);
  });
});
