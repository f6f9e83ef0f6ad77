import type { StateView } from '../../src/kafka/types';
import type { DeliveryAttempt } from '../../src/subscriptions/delivery-attempt';

/** Outcomes after which a callback is never sent again: the receiver took it, or it was given up on. */
const DONE = new Set<DeliveryAttempt['outcome']>(['delivered', 'dead-lettered']);

/**
 * The callbacks the delivery history shows done, by webhook-id (one per subscription and event).
 *
 * An event's offset is committed only once every callback of it is done, and a partition's commit cannot pass an
 * event still owed: a bridge that stops (or dies) leaves behind events it had delivered beyond its committed offset,
 * each with its attempt in the history. The next owner reads the history before it takes a partition over
 * (LaneSources), and a lane sends no callback this shows done: what a receiver sees again is only a callback that
 * was on the wire, or whose attempt was not yet written, when its bridge stopped.
 */
export class DeliveredCallbacks {
  /** view key → webhook-id, for the attempts that are done */
  private readonly doneByKey = new Map<string, string>();
  /** webhook-id → how many done attempts the view holds for it (a retried history write is a key of its own) */
  private readonly done = new Map<string, number>();

  constructor(readonly view: StateView<DeliveryAttempt>) {
    for (const [key, a] of view.entries()) this.apply(key, a);
    view.onChange((key, a) => this.apply(key, a));
  }

  has(webhookId: string): boolean {
    return this.done.has(webhookId);
  }

  private apply(key: string, a: DeliveryAttempt | undefined): void {
    const before = this.doneByKey.get(key);
    if (before !== undefined) {
      this.doneByKey.delete(key);
      const left = (this.done.get(before) ?? 1) - 1;
      if (left > 0) this.done.set(before, left);
      else this.done.delete(before);
    }
    if (!a || !DONE.has(a.outcome) || typeof a.webhookId !== 'string') return;
    this.doneByKey.set(key, a.webhookId);
    this.done.set(a.webhookId, (this.done.get(a.webhookId) ?? 0) + 1);
  }
}
