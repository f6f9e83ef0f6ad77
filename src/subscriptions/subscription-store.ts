import { v4 as uuidv4 } from 'uuid';
import type { KeyedCreation, OutgoingRecord, Publisher, StateView, ViewSource } from '../kafka/types';
import { writeThenRead } from '../kafka/read-your-writes';
import { LOG_RETENTION_MS } from '../kafka/topics';
import { waitAtLeast } from '../lib/abortable-sleep';
import { cursorKey, type BacklogCursor } from './backlog-cursor';
import {
  SUBSCRIPTIONS_VIEW,
  type CancelReason,
  type Subscription,
  type SubscriptionMode,
  type TaskEventPosition,
} from './subscription';
import { CANCEL_SETTLE_MS } from './subscription-lease';
import { newSecret } from './webhook-signature';
import { isoNow } from '../lib/iso-now';

export interface SubscriptionStoreDeps {
  view: StateView<Subscription>;
  publisher: Publisher;
  topic: string;
  /** the callback-backlogs topic, where a subscription to a task that began already owes it its events */
  cursorTopic: string;
  timeoutMs: number;
  /**
   * TASK_RETENTION_MS: how long a cancelled subscription is kept after it ended. Without it (the bridge, which only
   * follows active ones) none expires.
   */
  retentionMs?: number;
}

/** When a subscription is forgotten: a cancelled one, its retention after it ended; an active one never by itself. */
export function subscriptionExpiresAt(s: Subscription, retentionMs: number | undefined): number | undefined {
  if (retentionMs === undefined || s.status !== 'cancelled') return undefined;
  return Date.parse(s.updatedAt) + retentionMs;
}

export interface NewSubscription {
  tenant: string;
  callbackUrl: string;
  mode: SubscriptionMode;
  taskId?: string;
  taskEventsFrom?: TaskEventPosition;
  events?: string[];
}

/** The one writer of the subscriptions topic, for the api and the bridge alike. */
export class SubscriptionStore {
  constructor(private readonly deps: SubscriptionStoreDeps) {}

  /** The store on this process's view of the subscriptions topic. */
  static async open(views: ViewSource, deps: Omit<SubscriptionStoreDeps, 'view'>): Promise<SubscriptionStore> {
    return new SubscriptionStore({ ...deps, view: await views.view(SUBSCRIPTIONS_VIEW) });
  }

  /** The view the store reads, for those that sync it or follow its changes (the bridge's lease). */
  get view(): StateView<Subscription> {
    return this.deps.view;
  }

  /** Like a task's, an expired subscription is gone at once, before the sweeper's tombstone reaches the view. */
  get(id: string, now = Date.now()): Subscription | undefined {
    const s = this.deps.view.get(id);
    return s && !this.expired(s, now) ? s : undefined;
  }

  list(tenant: string, now = Date.now()): Subscription[] {
    return [...this.deps.view.values()]
      .filter((s) => s.tenant === tenant && !this.expired(s, now))
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1));
  }

  expiresAt(s: Subscription): number | undefined {
    return subscriptionExpiresAt(s, this.deps.retentionMs);
  }

  /**
   * What the retention sweep forgets: cancelled subscriptions past their window, and a task's subscription still
   * active when its task is gone (forgotten). Such a one (a `continuous` one, one whose final callback was
   * dead-lettered, one made after its task had finished) may still have callbacks on their way while the bridge
   * lags, so it goes only once it has not changed for the window and for as long as the events topic keeps events
   * (`LOG_RETENTION_MS`): by then no event of its task is left to deliver. The age also guards against a view of the
   * tasks topic that lags this one: a subscription is written with or after its task.
   */
  expiredIds(taskExists: (taskId: string) => boolean, now = Date.now()): string[] {
    const retentionMs = this.deps.retentionMs;
    if (retentionMs === undefined) return [];
    const orphanAfterMs = Math.max(retentionMs, LOG_RETENTION_MS);
    const out: string[] = [];
    for (const s of this.deps.view.values()) {
      const orphan =
        s.status === 'active' &&
        s.taskId !== undefined &&
        Date.parse(s.updatedAt) + orphanAfterMs <= now &&
        !taskExists(s.taskId);
      if (orphan || this.expired(s, now)) out.push(s.id);
    }
    return out;
  }

  /** Tombstones; a subscription ended again after it (a bridge's last end) is forgotten a window later. */
  async forget(ids: string[]): Promise<void> {
    const records = ids.map((id) => ({ topic: this.deps.topic, key: id, value: null }));
    await this.deps.publisher.publish(records, { timeoutMs: this.deps.timeoutMs });
  }

  private expired(s: Subscription, now: number): boolean {
    const at = this.expiresAt(s);
    return at !== undefined && at <= now;
  }

  /** The subscription and its record, for writing in another transaction (a task's). */
  draft(n: NewSubscription, id: string = uuidv4()): { subscription: Subscription; record: OutgoingRecord } {
    const now = isoNow();
    const subscription: Subscription = {
      id,
      ...n,
      secret: newSecret(),
      status: 'active',
      createdAt: now,
      updatedAt: now,
    };
    return { subscription, record: this.record(subscription) };
  }

  /** `idempotency`: the request's creation under its Idempotency-Key, whose answer the write carries. */
  async create(n: NewSubscription, idempotency?: KeyedCreation): Promise<Subscription> {
    const { subscription, record } = this.draft(n);
    await this.write([record, ...this.owedEvents(subscription)], this.deps.timeoutMs, idempotency);
    return subscription;
  }

  /**
   * A subscription to a task that began already is owed the task's events from its first one: a backlog cursor
   * there, in the subscription's transaction, makes the bridge read them back for it (at least once, in order), and
   * keep them from the group consumer's lane until it has. Without it, an event the bridge had read before the
   * subscription was in its view (the final one of a task that was just finishing, say) would never be delivered.
   */
  private owedEvents(s: Subscription): OutgoingRecord[] {
    const at = s.taskEventsFrom;
    if (!at) return [];
    const cursor: BacklogCursor = { subscriptionId: s.id, topic: at.topic, partition: at.partition, from: at.offset };
    const key = cursorKey(s.id, at.topic, at.partition);
    return [{ topic: this.deps.cursorTopic, key, value: JSON.stringify(cursor) }];
  }

  /**
   * Resolves CANCEL_SETTLE_MS after the cancellation is in this process's view, also when it was already there:
   * by then no bridge starts another callback for it (subscription-lease.ts). The settle time is inside the deadline.
   */
  async cancel(s: Subscription, reason: CancelReason): Promise<Subscription> {
    const cancelled = s.status === 'cancelled' ? s : await this.end(s, reason, this.deps.timeoutMs - CANCEL_SETTLE_MS);
    await waitAtLeast(CANCEL_SETTLE_MS);
    return cancelled;
  }

  /**
   * Ends a subscription and resolves once this process's view holds the end. The bridge ends one this way after a
   * refusal, a 410 or a once delivery: it needs no settle time, since it is the one that would deliver.
   */
  async end(s: Subscription, reason: CancelReason, timeoutMs = this.deps.timeoutMs): Promise<Subscription> {
    const ended: Subscription = {
      ...s,
      status: 'cancelled',
      cancelReason: reason,
      updatedAt: isoNow(),
    };
    await this.write([this.record(ended)], Math.max(1, timeoutMs));
    return ended;
  }

  private record(s: Subscription): OutgoingRecord {
    return { topic: this.deps.topic, key: s.id, value: JSON.stringify(s) };
  }

  private async write(
    records: OutgoingRecord[],
    timeoutMs = this.deps.timeoutMs,
    idempotency?: KeyedCreation,
  ): Promise<void> {
    const publish = (remainingMs: number) =>
      this.deps.publisher.publish(records, { timeoutMs: remainingMs, idempotency });
    await writeThenRead(this.deps.view, timeoutMs, publish);
  }
}
