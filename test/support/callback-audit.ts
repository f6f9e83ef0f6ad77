import { webhookId } from '../../consumers/callback-bridge/bridge-event';
import type { Delivery } from './chaos-receiver';
import { settled } from './settled';
import type { Submission } from './task-load';
import { finalsOf, type LoggedEvent, type TaskEventLog } from './task-event-log';

/** What one subscription received, compared with the events it should have received. */
export interface CallbackAudit {
  /** expected events never accepted */
  lost: number;
  /** the lost events' kinds, with `(tried)` when some attempt of theirs reached the receiver */
  lostEvents: string[];
  /** accepted webhook-ids that match no expected event */
  unexpected: number;
  /** accepted receipts of a webhook-id already accepted before */
  duplicates: number;
  /** one event (same kind, attempt and data) accepted under more than one webhook-id */
  splitIds: number;
  inversions: number;
  /** the first-accepted order, as event kinds, for a failure message */
  order: string[];
}

/**
 * Audits one subscription. `expected` are the events it should get, in topic
 * order (one task's events are in one partition, so offsets order them).
 *
 * Order, precisely: take the subscription's accepted receipts (2xx answers)
 * in arrival order, and keep each webhook-id's first one; a later receipt of
 * an id already accepted is a duplicate, not a new position. That is the
 * order of first accepted receipt. An inversion is an event in it whose
 * topic offset is lower than the offset of some event accepted before it:
 * the receiver had already accepted a later event when this one first got
 * through. Failed attempts (non-2xx, timeouts) do not count as receipt.
 */
export function auditSubscription(
  subscription: string,
  expected: LoggedEvent[],
  deliveries: Delivery[],
): CallbackAudit {
  const offsetOf = new Map(expected.map((e) => [webhookId(subscription, e.id), e.offset]));
  const tried = new Set(deliveries.filter((d) => d.subscription === subscription).map((d) => d.webhookId));
  const accepted = deliveries
    .filter((d) => d.subscription === subscription && d.accepted)
    .sort((a, b) => a.seq - b.seq);
  const first: Delivery[] = [];
  const seen = new Set<string>();
  for (const d of accepted) {
    if (!seen.has(d.webhookId)) first.push(d);
    seen.add(d.webhookId);
  }
  let highest = -1;
  let inversions = 0;
  for (const d of first) {
    const offset = offsetOf.get(d.webhookId);
    if (offset === undefined) continue;
    if (offset < highest) inversions += 1;
    highest = Math.max(highest, offset);
  }
  // A re-run task repeats its progress events with the same data: the attempt tells them apart.
  const attemptOf = new Map(expected.map((e) => [webhookId(subscription, e.id), e.attempt]));
  const idsByContent = new Map<string, Set<string>>();
  for (const d of accepted) {
    const content = `${d.event} ${attemptOf.get(d.webhookId) ?? '?'} ${JSON.stringify(d.data)}`;
    idsByContent.set(content, (idsByContent.get(content) ?? new Set()).add(d.webhookId));
  }
  return {
    lost: [...offsetOf.keys()].filter((id) => !seen.has(id)).length,
    lostEvents: expected
      .filter((e) => !seen.has(webhookId(subscription, e.id)))
      .map((e) => `${e.kind}${tried.has(webhookId(subscription, e.id)) ? '(tried)' : ''}`),
    unexpected: [...seen].filter((id) => !offsetOf.has(id)).length,
    duplicates: accepted.length - first.length,
    splitIds: [...idsByContent.values()].filter((ids) => ids.size > 1).length,
    inversions,
    order: first.map((d) => (d.event === 'task.progress' ? `p${String(d.data.current)}` : d.event.slice(5))),
  };
}

/** What a load's subscriptions received, summed over them (see auditSubscription). */
export interface LoadAudit {
  /** every task's final event was read and no subscription missed an event, within the wait */
  complete: boolean;
  lost: number;
  duplicates: number;
  inversions: number;
}

/**
 * Audits the subscription each accepted task was submitted with, once every task has its final event on the topic
 * and no subscription lacks an event, or once `settleMs` have passed (then what is missing is counted).
 */
export async function auditLoad(
  accepted: Submission[],
  events: TaskEventLog,
  deliveries: Delivery[],
  settleMs: number,
): Promise<LoadAudit> {
  const subs = accepted.map((s) => ({ task: s.taskId as string, sub: s.subscriptionId as string }));
  const audits = (): CallbackAudit[] =>
    subs.map(({ task, sub }) => auditSubscription(sub, events.byTask.get(task) ?? [], deliveries));
  const complete = await settled(async () => {
    if (!subs.every(({ task }) => finalsOf(events.byTask.get(task)) > 0)) return undefined;
    return audits().every((a) => a.lost === 0) ? true : undefined;
  }, settleMs);
  await events.catchUp(30000);
  const results = audits();
  const sum = (f: (a: CallbackAudit) => number) => results.reduce((n, a) => n + f(a), 0);
  return {
    complete,
    lost: sum((a) => a.lost),
    duplicates: sum((a) => a.duplicates),
    inversions: sum((a) => a.inversions),
  };
}
