import type { StateView } from '../../src/kafka/types';
import type { DeliveryAttempt } from '../../src/subscriptions/delivery-attempt';

/** Outcomes after which a callback is never sent again: the receiver took it, or it was given up on. */
export type DoneOutcome = 'delivered' | 'dead-lettered';
const isDone = (o: DeliveryAttempt['outcome']): o is DoneOutcome => o === 'delivered' || o === 'dead-lettered';

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
  /** view key → webhook-id and outcome, for the attempts that are done */
  private readonly doneByKey = new Map<string, { webhookId: string; outcome: DoneOutcome }>();
  /** webhook-id → how many done attempts the view holds for it, by outcome (a retried write is a key of its own) */
  private readonly done = new Map<string, Record<DoneOutcome, number>>();

  constructor(readonly view: StateView<DeliveryAttempt>) {
    for (const [key, a] of view.entries()) this.apply(key, a);
    view.onChange((key, a) => this.apply(key, a));
  }

  /** How the callback was done, if it was: delivered wins over a dead letter (the receiver has it). */
  outcomeOf(webhookId: string): DoneOutcome | undefined {
    const counts = this.done.get(webhookId);
    if (!counts) return undefined;
    return counts.delivered > 0 ? 'delivered' : 'dead-lettered';
  }

  private apply(key: string, a: DeliveryAttempt | undefined): void {
    const before = this.doneByKey.get(key);
    if (before !== undefined) {
      this.doneByKey.delete(key);
      const counts = this.done.get(before.webhookId);
      if (counts) {
        counts[before.outcome] -= 1;
        if (counts.delivered + counts['dead-lettered'] <= 0) this.done.delete(before.webhookId);
      }
    }
    if (!a || !isDone(a.outcome) || typeof a.webhookId !== 'string') return;
    this.doneByKey.set(key, { webhookId: a.webhookId, outcome: a.outcome });
    const counts = this.done.get(a.webhookId) ?? { delivered: 0, 'dead-lettered': 0 };
    counts[a.outcome] += 1;
    this.done.set(a.webhookId, counts);
  }
}
