import type { ViewSpec } from '../kafka/types';

export type SubscriptionMode = 'once' | 'continuous';
export type CancelReason = 'requested' | 'delivered-once' | 'refused' | 'gone' | 'dead-lettered';

/** Where a task's events begin: its first event's record. */
export interface TaskEventPosition {
  topic: string;
  partition: number;
  offset: string;
}

/** A subscription in the compacted subscriptions topic, key = its UUID. */
export interface Subscription {
  id: string;
  tenant: string;
  callbackUrl: string;
  mode: SubscriptionMode;
  /** one task's events… */
  taskId?: string;
  /**
   * …from this position on: the task's first event, for a subscription made over HTTP after its task was accepted.
   * Its task's events may already be behind the bridge, so the api writes a backlog cursor there with it (see
   * backlog-cursor.ts) and the bridge reads them back from Kafka: the subscription gets them whenever it was made.
   */
  taskEventsFrom?: TaskEventPosition;
  /** …or every event of these kinds */
  events?: string[];
  /** Standard Webhooks signing secret, `whsec_<base64>` */
  secret: string;
  status: 'active' | 'cancelled';
  cancelReason?: CancelReason;
  createdAt: string;
  updatedAt: string;
}

/** The event as the bridge sees it: what a subscription is matched against. */
export interface EventForMatching {
  kind: string;
  taskId?: string;
  /** the tenant of the task, for task events; domain events belong to every tenant */
  tenant?: string;
  /** ms since epoch, when the event was written */
  time: number;
}

const FINAL_TASK_EVENTS = ['task.succeeded', 'task.failed', 'task.cancelled'];

/**
 * Whether a subscription wants an event. A once subscription to a task wants
 * its final outcome only; one to event kinds wants the first matching event,
 * and never one written before the subscription existed.
 */
export function wants(s: Subscription, e: EventForMatching): boolean {
  if (s.status !== 'active') return false;
  if (e.tenant !== undefined && e.tenant !== s.tenant) return false;
  // A task's subscription is written with (or after) the task, and wants all of that task's events.
  if (s.taskId !== undefined) {
    if (e.taskId !== s.taskId) return false;
    return s.mode === 'continuous' || FINAL_TASK_EVENTS.includes(e.kind);
  }
  return e.time >= Date.parse(s.createdAt) && (s.events ?? []).includes(e.kind);
}

export function decodeSubscription(value: string): Subscription {
  const s = JSON.parse(value) as Subscription;
  if (typeof s?.id !== 'string' || typeof s.callbackUrl !== 'string') throw new Error('not a subscription');
  return s;
}

export const SUBSCRIPTIONS_VIEW: ViewSpec<Subscription> = { topic: 'subscriptions', decode: decodeSubscription };
