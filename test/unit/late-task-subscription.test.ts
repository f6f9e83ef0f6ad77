import { topicNames } from '../../src/kafka/topics';
import type { IncomingRecord } from '../../src/kafka/types';
import type { Subscription } from '../../src/subscriptions/subscription';
import { until } from '../support/until';
import { backlogBridge, partitionOwnership } from './backlog-bridge';
import { FakeCommitHolds, type FakePublisher } from './fakes';
import { ORIGIN } from './order-events';

/*
 * A subscription to a task made over HTTP after the task began (Subscription.taskEventsFrom, with the backlog cursor
 * the api writes beside it): the bridge may have read the task's events before the subscription was in its view. It
 * gets them all the same, from the task's first event, once each and in order, whether the view learns of it after
 * the group consumer offered them, before, or while the partition is another member's.
 */

// Each wait below allows 20 s: it ends as soon as its condition holds (2-5 s could be too short, both cores busy).

const owned = partitionOwnership();

/** FakeKafka's topic names (its prefix is `unit.`) */
const TOPICS = topicNames('unit.');

const KINDS = ['task.accepted', 'task.started', 'task.progress', 'task.succeeded'];

/** A task's events on partition 0 of the task-events topic; each carries its `n` (its place) in its data. */
async function taskEvents(publisher: FakePublisher, topic: string, taskId: string): Promise<IncomingRecord[]> {
  const records = KINDS.map((kind, n) => ({
    topic,
    key: taskId,
    partition: 0,
    value: JSON.stringify({ data: { n } }),
    headers: { ce_type: kind, ce_id: `${taskId}-${n}`, ce_tenant: 't' },
  }));
  const positions = await publisher.publish(records);
  return records.map((r, i) => ({ ...r, offset: positions[i].offset, timestamp: String(Date.now()) }));
}

function lateSubscription(id: string, taskId: string, mode: Subscription['mode'], first: IncomingRecord): Subscription {
  const at = new Date().toISOString();
  return {
    id,
    tenant: 't',
    callbackUrl: `${ORIGIN}/${id}`,
    mode,
    taskId,
    taskEventsFrom: { topic: first.topic, partition: first.partition, offset: first.offset },
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    status: 'active',
    createdAt: at,
    updatedAt: at,
  };
}

/** The cursor the api writes with such a subscription (SubscriptionStore's owed events). */
async function owedCursor(publisher: FakePublisher, topic: string, s: Subscription): Promise<void> {
  const at = s.taskEventsFrom!;
  const cursor = { subscriptionId: s.id, topic: at.topic, partition: at.partition, from: at.offset };
  await publisher.publish([{ topic, key: `${s.id}/${at.topic}/${at.partition}`, value: JSON.stringify(cursor) }]);
}

const settled = (accepted: Map<string, number[]>, id: string, count: number) =>
  until(async () => ((accepted.get(id) ?? []).length >= count ? true : undefined), 20000, 10);

describe('a task subscription made after the bridge offered its task events', () => {
  test('continuous: every event of the task, in order, once; the event it was matched live is not sent twice', async () => {
    const { publisher, view, bridge, accepted, agent } = backlogBridge({ laneBuffer: 10 });
    const topic = TOPICS.taskEvents;
    const events = await taskEvents(publisher, topic, 'task-1');
    const signal = owned().signal;
    const holds = new FakeCommitHolds();
    // The group consumer offers the first three while no subscription wants them.
    for (const r of events.slice(0, 3)) await bridge.onEvent(r, signal, holds.holdCommit);
    const s = lateSubscription('late', 'task-1', 'continuous', events[0]);
    view.set(s.id, s);
    // The fourth is matched live, with the subscription in the view: the backlog answers for it, not the lane too.
    await bridge.onEvent(events[3], signal, holds.holdCommit);
    await settled(accepted, 'late', 4);
    await agent.close();
    expect(accepted.get('late')).toEqual([0, 1, 2, 3]);
  });

  test('once: only the final outcome, once', async () => {
    const { publisher, view, bridge, accepted, agent, attempts } = backlogBridge({ laneBuffer: 10 });
    const topic = TOPICS.taskEvents;
    const events = await taskEvents(publisher, topic, 'task-2');
    const signal = owned().signal;
    const holds = new FakeCommitHolds();
    for (const r of events) await bridge.onEvent(r, signal, holds.holdCommit);
    const s = lateSubscription('once', 'task-2', 'once', events[0]);
    view.set(s.id, s);
    await settled(accepted, 'once', 1);
    await agent.close();
    expect(accepted.get('once')).toEqual([3]);
    expect(attempts()).toBe(1);
  });

  test('made before the group consumer reaches the task: every event once, in order', async () => {
    const { publisher, view, bridge, accepted, agent } = backlogBridge({ laneBuffer: 10 });
    const topic = TOPICS.taskEvents;
    const events = await taskEvents(publisher, topic, 'task-3');
    const signal = owned().signal;
    const holds = new FakeCommitHolds();
    // This member offers the partition (an earlier record), but not the task's events yet.
    const [earlier] = await taskEvents(publisher, topic, 'other');
    await bridge.onEvent(earlier, signal, holds.holdCommit);
    const s = lateSubscription('early', 'task-3', 'continuous', events[0]);
    view.set(s.id, s);
    for (const r of events) await bridge.onEvent(r, signal, holds.holdCommit);
    await settled(accepted, 'early', 4);
    await agent.close();
    expect(accepted.get('early')).toEqual([0, 1, 2, 3]);
  });

  test('a member assigned a partition with nothing new serves one made after it took the partition', async () => {
    const { publisher, view, bridge, accepted, agent } = backlogBridge({ laneBuffer: 10 });
    const topic = TOPICS.taskEvents;
    const events = await taskEvents(publisher, topic, 'task-5');
    // Restarted after the task's events were committed by the group: no record of the partition will come.
    bridge.assigned(topic, 0, owned().signal, BigInt(events[3].offset) + 1n);
    const s = lateSubscription('quiet', 'task-5', 'continuous', events[0]);
    view.set(s.id, s);
    await settled(accepted, 'quiet', 4);
    await agent.close();
    expect(accepted.get('quiet')).toEqual([0, 1, 2, 3]);
  });

  test('a member assigned a partition with nothing new reads its backlogs from their cursors at once', async () => {
    const { publisher, view, cursors, bridge, accepted, agent } = backlogBridge({ laneBuffer: 10 });
    const { taskEvents: topic, callbackBacklogs } = TOPICS;
    const events = await taskEvents(publisher, topic, 'task-6');
    const s = lateSubscription('cursor', 'task-6', 'continuous', events[0]);
    await owedCursor(publisher, callbackBacklogs, s);
    await until(async () => (cursors.get(`${s.id}/${topic}/0`) ? true : undefined), 20000, 10);
    view.set(s.id, s);
    bridge.assigned(topic, 0, owned().signal, BigInt(events[3].offset) + 1n);
    await settled(accepted, 'cursor', 4);
    await agent.close();
    expect(accepted.get('cursor')).toEqual([0, 1, 2, 3]);
  });

  test('the member that takes the partition over reads them from the cursor the api wrote', async () => {
    const { publisher, view, cursors, newBridge, accepted, agent } = backlogBridge({ laneBuffer: 10 });
    const { taskEvents: topic, callbackBacklogs } = TOPICS;
    const events = await taskEvents(publisher, topic, 'task-4');
    const s = lateSubscription('taken-over', 'task-4', 'continuous', events[0]);
    // Made while no member offered the partition: the view has it before the new owner's first record.
    await owedCursor(publisher, callbackBacklogs, s);
    await until(async () => (cursors.get(`${s.id}/${topic}/0`) ? true : undefined), 20000, 10);
    view.set(s.id, s);
    const bridge = newBridge();
    const signal = owned().signal;
    const holds = new FakeCommitHolds();
    // The new owner starts after the task's events (the group committed past them).
    const later = await taskEvents(publisher, topic, 'later');
    for (const r of later) await bridge.onEvent(r, signal, holds.holdCommit);
    await settled(accepted, 'taken-over', 4);
    await agent.close();
    expect(accepted.get('taken-over')).toEqual([0, 1, 2, 3]);
  });
});
