import type { Agent } from 'undici';
import { pause } from '../../src/tasks/abortable-sleep';
import type { Publisher, StateView } from '../../src/kafka/types';
import type { Logger } from '../../src/logger';
import { attemptKey, type DeliveryAttempt } from '../../src/subscriptions/delivery-attempt';
import type { CancelReason, Subscription } from '../../src/subscriptions/subscription';
import { backoffMs, sendCallback, type CallbackMessage, type CallbackResult } from './send-callback';

/** A callback waiting in the retry topic: the message, its next attempt number, and when it is due. */
export interface ParkedCallback {
  message: Omit<CallbackMessage, 'secret' | 'callbackUrl'>;
  attempt: number;
  dueAt: number;
}

export interface LaneDeps {
  publisher: Publisher;
  subscriptions: StateView<Subscription>;
  agent: Agent;
  logger: Logger;
  topics: { subscriptions: string; deliveries: string; callbackRetries: string; callbackDeadLetters: string };
  callbacks: { timeoutMs: number; maxAttempts: number; backoffBaseMs: number; backoffMaxMs: number };
  kafkaTimeoutMs: number;
}

/**
 * One subscription's callbacks, one at a time and in order, so a slow or dead
 * endpoint only ever holds up itself. A fresh event gets one attempt; if it
 * fails, it is parked in the retry topic (its event's offset can then be
 * committed) and retried from there with backoff. While anything of the
 * subscription is parked, fresh events are parked behind it, keeping order.
 */
export class DeliveryLane {
  private tail: Promise<unknown> = Promise.resolve();
  private parked = 0;

  constructor(private readonly subscriptionId: string, private readonly deps: LaneDeps, private readonly stopping: AbortSignal) {}

  /** Resolves once the event is delivered, refused, dropped (subscription ended) or parked. */
  fresh(message: CallbackParts): Promise<void> {
    if (this.parked > 0) return this.park({ message, attempt: 1, dueAt: Date.now() });
    return this.serial(async () => {
      if (this.parked > 0) return this.park({ message, attempt: 1, dueAt: Date.now() });
      const result = await this.attempt(message, 1);
      if (result?.outcome === 'failed') await this.park({ message, attempt: 2, dueAt: Date.now() + this.delay(1, result.retryAfterMs) });
    });
  }

  /** A parked callback from the retry topic: retried in place until delivered, ended, or dead-lettered. */
  retry(parked: ParkedCallback): Promise<void> {
    return this.serial(async () => {
      let { attempt, dueAt } = parked;
      try {
        for (;;) {
          await pause(dueAt - Date.now(), this.stopping);
          if (this.stopping.aborted) throw new Error('stopping');
          const result = await this.attempt(parked.message, attempt);
          if (result?.outcome !== 'failed') return;
          if (attempt >= this.deps.callbacks.maxAttempts) {
            await this.deadLetter(parked.message, attempt, result.error);
            return;
          }
          dueAt = Date.now() + this.delay(attempt, result.retryAfterMs);
          attempt += 1;
        }
      } finally {
        if (!this.stopping.aborted) this.parked = Math.max(0, this.parked - 1);
      }
    });
  }

  private serial(job: () => Promise<void>): Promise<void> {
    const run = this.tail.then(job, job);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private delay(attempt: number, retryAfter?: number): number {
    return backoffMs(attempt, this.deps.callbacks.backoffBaseMs, this.deps.callbacks.backoffMaxMs, retryAfter);
  }

  private async park(parked: ParkedCallback): Promise<void> {
    this.parked += 1;
    await this.deps.publisher.publish([{ topic: this.deps.topics.callbackRetries, key: this.subscriptionId, value: JSON.stringify(parked) }]);
  }

  /** One attempt, unless the subscription has ended; every attempt goes to the delivery history. */
  private async attempt(message: CallbackParts, attempt: number): Promise<CallbackResult | undefined> {
    // Everything written to the subscriptions topic before now is applied: a cancellation answered 202 is seen.
    await this.deps.subscriptions.syncedSince(Date.now(), this.deps.kafkaTimeoutMs);
    const sub = this.deps.subscriptions.get(this.subscriptionId);
    if (!sub || sub.status !== 'active') return undefined;
    const result = await sendCallback({ ...message, callbackUrl: sub.callbackUrl, secret: sub.secret }, this.deps.agent, this.deps.callbacks.timeoutMs);
    const record: DeliveryAttempt = {
      subscriptionId: sub.id, webhookId: message.webhookId, event: message.event, ...(message.taskId ? { taskId: message.taskId } : {}),
      attempt, at: new Date().toISOString(), outcome: result.outcome, latencyMs: result.latencyMs,
      ...(result.statusCode !== undefined ? { statusCode: result.statusCode } : {}),
      ...(result.outcome === 'failed' ? { error: result.error } : {}),
    };
    await this.deps.publisher.publish([{ topic: this.deps.topics.deliveries, key: attemptKey(record), value: JSON.stringify(record) }]);
    const ends: Partial<Record<CallbackResult['outcome'], CancelReason>> = { refused: 'refused', gone: 'gone' };
    const reason = ends[result.outcome] ?? (result.outcome === 'delivered' && sub.mode === 'once' ? 'delivered-once' : undefined);
    if (reason) await this.end(sub, reason);
    return result;
  }

  private async end(sub: Subscription, reason: CancelReason): Promise<void> {
    const ended: Subscription = { ...sub, status: 'cancelled', cancelReason: reason, updatedAt: new Date().toISOString() };
    const positions = await this.deps.publisher.publish([{ topic: this.deps.topics.subscriptions, key: sub.id, value: JSON.stringify(ended) }]);
    await this.deps.subscriptions.waitFor(positions, this.deps.kafkaTimeoutMs);
  }

  private async deadLetter(message: CallbackParts, attempts: number, lastError: string): Promise<void> {
    const at = new Date().toISOString();
    const record: DeliveryAttempt = { subscriptionId: this.subscriptionId, webhookId: message.webhookId, event: message.event, attempt: attempts + 1, at, outcome: 'dead-lettered', latencyMs: 0, error: lastError };
    await this.deps.publisher.publish([
      { topic: this.deps.topics.callbackDeadLetters, key: this.subscriptionId, value: JSON.stringify({ ...message, attempts, lastError, at }) },
      { topic: this.deps.topics.deliveries, key: attemptKey(record), value: JSON.stringify(record) },
    ]);
  }
}

export type CallbackParts = Omit<CallbackMessage, 'secret' | 'callbackUrl'>;

