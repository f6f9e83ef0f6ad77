import { v4 as uuidv4 } from 'uuid';
import type { OutgoingRecord, Publisher, StateView } from '../kafka/types';
import { writeThenRead } from '../kafka/read-your-writes';
import type { DeliveryHistory } from './delivery-attempt';
import type { CancelReason, Subscription, SubscriptionMode } from './subscription';
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

  async cancel(s: Subscription, reason: CancelReason): Promise<Subscription> {
    if (s.status === 'cancelled') return s;
    const cancelled: Subscription = { ...s, status: 'cancelled', cancelReason: reason, updatedAt: new Date().toISOString() };
    await this.write([this.record(cancelled)]);
    return cancelled;
  }

  private record(s: Subscription): OutgoingRecord {
    return { topic: this.deps.topic, key: s.id, value: JSON.stringify(s) };
  }

  private async write(records: OutgoingRecord[]): Promise<void> {
    await writeThenRead(this.deps.view, this.deps.timeoutMs, (timeoutMs) => this.deps.publisher.publish(records, { timeoutMs }));
  }
}
