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

/** The key's parts; a tombstone carries no value to read them from. */
function parseAttemptKey(key: string): { subscriptionId: string; webhookId: string; attempt: number } | undefined {
  const parts = key.split('/');
  if (parts.length !== 3) return undefined;
  return { subscriptionId: parts[0], webhookId: parts[1], attempt: Number(parts[2]) };
}

export function decodeDeliveryAttempt(value: string): DeliveryAttempt {
  const a = JSON.parse(value) as DeliveryAttempt;
  if (typeof a?.subscriptionId !== 'string') throw new Error('not a delivery attempt');
  return a;
}

export const DELIVERIES_VIEW: ViewSpec<DeliveryAttempt> = { topic: 'deliveries', decode: decodeDeliveryAttempt };

const KEEP = 500;

/** Each subscription's most recent attempts, indexed from the deliveries view. */
export class DeliveryHistory {
  private readonly bySubscription = new Map<string, DeliveryAttempt[]>();

  /** The history on this process's view of the deliveries topic. */
  static async open(views: ViewSource): Promise<DeliveryHistory> {
    return new DeliveryHistory(await views.view(DELIVERIES_VIEW));
  }

  constructor(private readonly view: StateView<DeliveryAttempt>) {
    for (const a of view.values()) this.add(a);
    view.onChange((key, a) => {
      if (a) this.add(a);
      else this.remove(key);
    });
  }

  of(subscriptionId: string): DeliveryAttempt[] {
    return this.bySubscription.get(subscriptionId) ?? [];
  }

  /**
   * The keys of attempts made a window ago or earlier, from the whole view: the index keeps a subscription's last
   * KEEP, the view every attempt not yet tombstoned.
   */
  expiredKeys(retentionMs: number, now = Date.now()): string[] {
    const out: string[] = [];
    for (const a of this.view.values()) if (Date.parse(a.at) + retentionMs <= now) out.push(attemptKey(a));
    return out;
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

  private remove(key: string): void {
    const k = parseAttemptKey(key);
    const list = k && this.bySubscription.get(k.subscriptionId);
    if (!k || !list) return;
    const i = list.findIndex((a) => a.webhookId === k.webhookId && a.attempt === k.attempt);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.bySubscription.delete(k.subscriptionId);
  }
}

function before(a: DeliveryAttempt, b: DeliveryAttempt): boolean {
  return a.at < b.at || (a.at === b.at && a.attempt < b.attempt);
}
