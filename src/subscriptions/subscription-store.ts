import { v4 as uuidv4 } from 'uuid';
import type { OutgoingRecord, Publisher, StateView } from '../kafka/types';
import { writeThenRead } from '../kafka/read-your-writes';
import { waitAtLeast } from '../lib/abortable-sleep';
import type { DeliveryHistory } from './delivery-attempt';
import type { CancelReason, Subscription, SubscriptionMode } from './subscription';
import { CANCEL_SETTLE_MS } from './subscription-lease';
import { newSecret } from './webhook-signature';

export interface SubscriptionStoreDeps {
  view: StateView<Subscription>;
  history: DeliveryHistory;
  publisher: Publisher;
  topic: string;
  timeoutMs: number;
}

export interface NewSubscription {
  tenant: string;
  callbackUrl: string;
  mode: SubscriptionMode;
  taskId?: string;
  events?: string[];
}

export class SubscriptionStore {
  constructor(private readonly deps: SubscriptionStoreDeps) {}

  get history(): DeliveryHistory {
    return this.deps.history;
  }

  get(id: string): Subscription | undefined {
    return this.deps.view.get(id);
  }

  list(tenant: string): Subscription[] {
    return [...this.deps.view.values()].filter((s) => s.tenant === tenant).sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1));
  }

  /** The subscription and its record, for writing in another transaction (a task's). */
  draft(n: NewSubscription, id: string = uuidv4()): { subscription: Subscription; record: OutgoingRecord } {
    const now = new Date().toISOString();
    const subscription: Subscription = { id, ...n, secret: newSecret(), status: 'active', createdAt: now, updatedAt: now };
    return { subscription, record: this.record(subscription) };
  }

  async create(n: NewSubscription): Promise<Subscription> {
    const { subscription, record } = this.draft(n);
    await this.write([record]);
    return subscription;
  }

  /**
   * Resolves CANCEL_SETTLE_MS after the cancellation is in this process's view, also when it was already there:
   * by then no bridge starts another callback for it (subscription-lease.ts). The settle time is inside the deadline.
   */
  async cancel(s: Subscription, reason: CancelReason): Promise<Subscription> {
    let cancelled = s;
    if (s.status !== 'cancelled') {
      cancelled = { ...s, status: 'cancelled', cancelReason: reason, updatedAt: new Date().toISOString() };
      await this.write([this.record(cancelled)], Math.max(1, this.deps.timeoutMs - CANCEL_SETTLE_MS));
    }
    await waitAtLeast(CANCEL_SETTLE_MS);
    return cancelled;
  }

  private record(s: Subscription): OutgoingRecord {
    return { topic: this.deps.topic, key: s.id, value: JSON.stringify(s) };
  }

  private async write(records: OutgoingRecord[], timeoutMs = this.deps.timeoutMs): Promise<void> {
    const publish = (remainingMs: number) => this.deps.publisher.publish(records, { timeoutMs: remainingMs });
    await writeThenRead(this.deps.view, timeoutMs, publish);
  }
}
