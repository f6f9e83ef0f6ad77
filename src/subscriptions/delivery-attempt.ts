import type { StateView, ViewSource, ViewSpec } from '../kafka/types';

export type DeliveryOutcome = 'delivered' | 'refused' | 'gone' | 'failed' | 'dead-lettered';

/** One callback attempt, written by the bridge to the deliveries topic. */
export interface DeliveryAttempt {
  subscriptionId: string;
  webhookId: string;
  event: string;
  taskId?: string;
  attempt: number;
  at: string;
  outcome: DeliveryOutcome;
  statusCode?: number;
  latencyMs: number;
  error?: string;
  /** when the next attempt is due, for a failed attempt that will be retried */
  nextAttemptAt?: string;
}

export const attemptKey = (a: Pick<DeliveryAttempt, 'subscriptionId' | 'webhookId' | 'attempt'>) =>
  `${a.subscriptionId}/${a.webhookId}/${a.attempt}`;

export function decodeDeliveryAttempt(value: string): DeliveryAttempt {
  const a = JSON.parse(value) as DeliveryAttempt;
  if (typeof a?.subscriptionId !== 'string') throw new Error('not a delivery attempt');
  return a;
}

const DELIVERIES_VIEW: ViewSpec<DeliveryAttempt> = { topic: 'deliveries', decode: decodeDeliveryAttempt };

const KEEP = 500;

/** Each subscription's most recent attempts, indexed from the deliveries view. */
export class DeliveryHistory {
  private readonly bySubscription = new Map<string, DeliveryAttempt[]>();

  /** The history on this process's view of the deliveries topic. */
  static async open(views: ViewSource): Promise<DeliveryHistory> {
    return new DeliveryHistory(await views.view(DELIVERIES_VIEW));
  }

  constructor(view: StateView<DeliveryAttempt>) {
    for (const a of view.values()) this.add(a);
    view.onChange((_key, a) => {
      if (a) this.add(a);
    });
  }

  of(subscriptionId: string): DeliveryAttempt[] {
    return this.bySubscription.get(subscriptionId) ?? [];
  }

  /**
   * Kept in the order they happened (time, then attempt number). Attempts are keyed one by one, so a
   * subscription's land on different partitions of the deliveries topic, and the view hands them over in
   * whatever order its partitions are read: #2 before #1 was common. Most come in order, so the place is
   * found from the end.
   */
  private add(a: DeliveryAttempt): void {
    const list = this.bySubscription.get(a.subscriptionId) ?? [];
    let i = list.length;
    while (i > 0 && before(a, list[i - 1])) i -= 1;
    list.splice(i, 0, a);
    if (list.length > KEEP) list.splice(0, list.length - KEEP);
    this.bySubscription.set(a.subscriptionId, list);
  }
}

function before(a: DeliveryAttempt, b: DeliveryAttempt): boolean {
  return a.at < b.at || (a.at === b.at && a.attempt < b.attempt);
}
