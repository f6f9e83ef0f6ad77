import type { CancelReason, Subscription } from '../../src/subscriptions/subscription';
import type { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import type { DoneOutcome } from './delivered-callbacks';
import type { CallbackResult } from './send-callback';
import { untilDone, type StepOf } from './until-done';

/** The answers that end a subscription. */
const ENDS: Partial<Record<CallbackResult['outcome'], CancelReason>> = { refused: 'refused', gone: 'gone' };

/** Why an attempt's outcome ends its subscription, if it does: a refusal, a 410, or a once subscription's delivery. */
export function endingReason(outcome: CallbackResult['outcome'], sub: Subscription): CancelReason | undefined {
  return ENDS[outcome] ?? (outcome === 'delivered' && sub.mode === 'once' ? 'delivered-once' : undefined);
}

export interface SubscriptionEndsDeps {
  subscriptions: SubscriptionStore;
  kafkaTimeoutMs: number;
}

/**
 * How a lane ends its subscription: the bridge ends one after a refusal, a 410, a once delivery, or a once task
 * subscription's dead letter. Each end is retried until it is written and read back, or the event is handed back.
 */
export class SubscriptionEnds {
  constructor(
    private readonly subscriptionId: string,
    private readonly deps: SubscriptionEndsDeps,
    /** the lane's Kafka step, as its retries log it */
    private readonly step: StepOf,
  ) {}

  /**
   * `evenIfStopped`: tried once even after the event was handed back, for an end an attempt's answer made (a once
   * delivery, a refusal, a 410). That answer came, whoever owns the event now: left unwritten, the next owner would
   * send the callback again, and a once subscription's repeat turned away by its receiver (409 for a request it was
   * still answering) would be dead-lettered there and the next event sent, a second accepted callback.
   */
  end(sub: Subscription, reason: CancelReason, signal: AbortSignal, evenIfStopped = false): Promise<void> {
    // The write, then the view's read of it, each within KAFKA_TIMEOUT_MS (as before the store did both).
    const within = 2 * this.deps.kafkaTimeoutMs;
    return untilDone(signal, this.step, () => this.deps.subscriptions.end(sub, reason, within), evenIfStopped);
  }

  /**
   * A `once` task subscription gets the task's outcome, which comes once: dead-lettered, it has nothing left to wait
   * for. Ended (`dead-lettered`), it is forgotten a window later, with its task and its history; left active, it
   * outlived both, saying nothing of why.
   */
  async afterDeadLetter(signal: AbortSignal): Promise<void> {
    const sub = this.deps.subscriptions.get(this.subscriptionId);
    if (sub?.status !== 'active' || sub.mode !== 'once' || sub.taskId === undefined) return;
    await this.end(sub, 'dead-lettered', signal);
  }

  /**
   * A callback an earlier owner did: a bridge that died between its once callback (or dead letter) and the end of
   * the subscription left that end unwritten, and a once subscription left active would never end. Written here, as
   * that bridge would have. The caller reads the subscription as an attempt does (SendClearance): a stale view
   * would rewrite an end already written (a user's cancel among them) as this one.
   */
  async afterEarlierOwner(done: DoneOutcome, signal: AbortSignal): Promise<void> {
    if (done === 'dead-lettered') return this.afterDeadLetter(signal);
    const sub = this.deps.subscriptions.get(this.subscriptionId);
    if (sub?.status !== 'active' || sub.mode !== 'once') return;
    await this.end(sub, 'delivered-once', signal);
  }
}
