import type { StateView, ViewSource, ViewSpec } from '../kafka/types';
import type { CancelReason, Subscription } from './subscription';

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

/**
 * A record's key: `<subscription>/<webhook-id>/<run>/<attempt>`, or `/<run>/dead-lettered` for the dead letter.
 * `run` names one bridge's handling of the event: after a bridge restart (or a partition moving) an event not yet
 * committed is handled again, numbering its attempts from 1, and without the run those records would overwrite the
 * first handling's in every view of the topic (keyed), leaving a history that never happened.
 */
export const attemptKey = (
  a: Pick<DeliveryAttempt, 'subscriptionId' | 'webhookId' | 'attempt' | 'outcome'>,
  run: string,
) => `${a.subscriptionId}/${a.webhookId}/${run}/${a.outcome === 'dead-lettered' ? 'dead-lettered' : a.attempt}`;

export function decodeDeliveryAttempt(value: string): DeliveryAttempt {
  const a = JSON.parse(value) as DeliveryAttempt;
  if (typeof a?.subscriptionId !== 'string') throw new Error('not a delivery attempt');
  return a;
}

export const DELIVERIES_VIEW: ViewSpec<DeliveryAttempt> = { topic: 'deliveries', decode: decodeDeliveryAttempt };

/** attempts of a subscription kept in the history; the sweep tombstones older ones (subscription-retention.ts) */
export const KEEP_ATTEMPTS = 500;

/**
 * Each subscription's most recent attempts, indexed from the deliveries view. The view holds every attempt not yet
 * tombstoned; `expiredKeys` names those the index no longer holds or that are past the window, so the retention
 * sweep keeps the view (and this process's memory) to the last KEEP_ATTEMPTS of each subscription, within the window.
 */
export class DeliveryHistory {
  private readonly bySubscription = new Map<string, DeliveryAttempt[]>();
  /** view key → the attempt the index holds for it */
  private readonly indexed = new Map<string, DeliveryAttempt>();
  private readonly keyOf = new WeakMap<DeliveryAttempt, string>();
  /** ended subscriptions (as the view holds them) the history was synced for: one sync each, however often read */
  private readonly synced = new WeakSet<Subscription>();

  /** The history on this process's view of the deliveries topic; a sync for an ended subscription waits `syncMs`. */
  static async open(views: ViewSource, syncMs?: number): Promise<DeliveryHistory> {
    return new DeliveryHistory(await views.view(DELIVERIES_VIEW), syncMs);
  }

  constructor(
    private readonly view: StateView<DeliveryAttempt>,
    private readonly syncMs = 5000,
  ) {
    for (const [key, a] of view.entries()) this.add(key, a);
    view.onChange((key, a) => {
      this.remove(key);
      if (a) this.add(key, a);
    });
  }

  of(subscriptionId: string): DeliveryAttempt[] {
    return this.bySubscription.get(subscriptionId) ?? [];
  }

  /**
   * Resolves once the history shows the attempt that ended `s`, where a bridge ended it (a delivered `once`, a
   * refusal, a dead letter). The bridge writes the attempt before the end, but this process reads them from two
   * topics and may have applied the end first: a `once` subscription showed ended with `delivered: 0`. One sync of
   * the history per ended subscription, and only while the attempt is missing; a sync that fails or passes its bound
   * leaves the answer as the view has it (a read is not refused for it). Undefined when there is nothing to wait for:
   * most reads answer without a promise.
   */
  explaining(s: Subscription): Promise<void> | undefined {
    const outcome = s.cancelReason && ENDED_BY[s.cancelReason];
    if (!outcome || this.synced.has(s) || this.of(s.id).some((a) => a.outcome === outcome)) return undefined;
    this.synced.add(s);
    return this.view.syncedSince(Date.now(), this.syncMs).catch(() => undefined);
  }

  /**
   * The keys to tombstone: `expired`, attempts made a window ago or earlier (or with no readable time); `trimmed`,
   * younger attempts the index let go of, beyond a subscription's last KEEP_ATTEMPTS. Read from the view with its own
   * keys, so a record keyed otherwise than attemptKey is tombstoned too.
   */
  expiredKeys(retentionMs: number, now = Date.now()): { expired: string[]; trimmed: string[] } {
    const expired: string[] = [];
    const trimmed: string[] = [];
    for (const [key, a] of this.view.entries()) {
      if (!(Date.parse(a.at) + retentionMs > now)) expired.push(key);
      else if (!this.indexed.has(key)) trimmed.push(key);
    }
    return { expired, trimmed };
  }

  /**
   * Kept in the order they happened (time, then attempt number). Attempts are keyed one by one, so a
   * subscription's land on different partitions of the deliveries topic, and the view hands them over in
   * whatever order its partitions are read: #2 before #1 was common. Most come in order, so the place is
   * found from the end. A key written again (a history write retried) replaces what the index held for it.
   */
  private add(key: string, a: DeliveryAttempt): void {
    const list = this.bySubscription.get(a.subscriptionId) ?? [];
    let i = list.length;
    while (i > 0 && before(a, list[i - 1])) i -= 1;
    list.splice(i, 0, a);
    this.indexed.set(key, a);
    this.keyOf.set(a, key);
    if (list.length > KEEP_ATTEMPTS) {
      for (const dropped of list.splice(0, list.length - KEEP_ATTEMPTS)) {
        const k = this.keyOf.get(dropped);
        if (k !== undefined) this.indexed.delete(k);
      }
    }
    this.bySubscription.set(a.subscriptionId, list);
  }

  private remove(key: string): void {
    const a = this.indexed.get(key);
    if (!a) return;
    this.indexed.delete(key);
    const list = this.bySubscription.get(a.subscriptionId);
    if (!list) return;
    const i = list.indexOf(a);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.bySubscription.delete(a.subscriptionId);
  }
}

/** The attempt outcome that a bridge ends a subscription for, by its cancel reason. */
const ENDED_BY: Partial<Record<CancelReason, DeliveryAttempt['outcome']>> = {
  'delivered-once': 'delivered',
  refused: 'refused',
  gone: 'gone',
  'dead-lettered': 'dead-lettered',
};

/** Time, then attempt number; a dead letter, numbered as the attempt it follows, comes after it. */
function before(a: DeliveryAttempt, b: DeliveryAttempt): boolean {
  if (a.at !== b.at) return a.at < b.at;
  if (a.attempt !== b.attempt) return a.attempt < b.attempt;
  return a.outcome !== 'dead-lettered' && b.outcome === 'dead-lettered';
}
