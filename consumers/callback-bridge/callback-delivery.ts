import { pause } from '../../src/lib/abortable-sleep';
import { randomHex } from '../../src/lib/random-hex';
import { CallbackAttempts, type AttemptOf } from './callback-attempt';
import type { CallbackFailureLog } from './callback-failure-log';
import { deadLetterRecords } from './dead-letter';
import type { DoneOutcome } from './delivered-callbacks';
import type { LaneDeps } from './delivery-lanes';
import { EarlierOwner } from './earlier-owner';
import type { CallbackParts } from './lane-job';
import { decidedByOneBridge, onceCallbackRecord } from './once-callbacks';
import { SendClearance } from './send-clearance';
import { SubscriptionEnds } from './subscription-ends';
import { untilDone, type StepOf } from './until-done';

/**
 * One callback of a lane's, from its first attempt to its end: retried in place (with backoff and Retry-After) until
 * it is delivered, refused, gone or dead-lettered, or its subscription has ended; or handed on to the bridge that
 * decides a `once` subscription to event kinds (once-callbacks.ts). The lane (delivery-lanes.ts) decides which
 * callback is next, and what waits meanwhile.
 */
export class CallbackDelivery {
  private readonly clearance: SendClearance;
  private readonly ends: SubscriptionEnds;
  private readonly attempts: CallbackAttempts;
  private readonly earlier: EarlierOwner;

  constructor(
    private readonly subscriptionId: string,
    private readonly deps: LaneDeps,
    private readonly failureLog: CallbackFailureLog,
    /** an attempt failed and the callback is tried again after a backoff: the lane lets what waits behind it go */
    private readonly onRetry: (attempt: number) => void,
  ) {
    this.clearance = new SendClearance(deps, (what) => this.step(what));
    this.ends = new SubscriptionEnds(subscriptionId, deps, this.step('end the subscription'));
    this.attempts = new CallbackAttempts(subscriptionId, deps, this.clearance, this.ends, (what) => this.step(what));
    this.earlier = new EarlierOwner(deps, this.step('read the delivery history'));
  }

  /** `partition`: where its event came from (JobOrigin), to tell whether an earlier owner may still be sending it */
  async deliver(message: CallbackParts, signal: AbortSignal, writes: Promise<void>[], partition?: string) {
    // Delivered (or dead-lettered) before its event came back to the group: not sent again.
    const done = this.earlier.doneElsewhere(message.webhookId);
    if (done !== undefined) return this.doneByEarlierOwner(done, signal);
    if (message.handOn) return this.handOn(message, signal);
    const run = randomHex(4);
    for (let attempt = 1; ; attempt += 1) {
      const result = await this.attempts.once(message, { run, attempt }, signal, writes);
      if (result?.outcome !== 'failed') return;
      // Told once per callback, not per retry: a dead endpoint's retries are in the metrics and the history.
      if (attempt === 1) this.failureLog.tell('failed', { ...this.named(message), error: result.error });
      // An earlier owner's request of it, still open when this bridge took its partition over, may have been
      // accepted meanwhile (a receiver turning the repeat away failed this one): then it is done.
      const elsewhere = this.earlier.doneElsewhere(message.webhookId);
      if (elsewhere !== undefined) return this.doneByEarlierOwner(elsewhere, signal);
      if (attempt >= this.deps.callbacks.maxAttempts) {
        // The last attempt's record first: the history lists the dead letter after it, in the order they happened.
        await Promise.all(writes);
        const before = await this.doneBeforeDeadLetter(message, partition, signal);
        if (before !== undefined) return this.doneByEarlierOwner(before, signal);
        await this.deadLetter(message, { run, attempt }, result.error, signal);
        await this.ends.afterDeadLetter(signal);
        return;
      }
      this.onRetry(attempt);
      await pause(result.retryInMs ?? 0, signal);
    }
  }

  /** Only a once subscription to event kinds goes on to its next event after a dead letter: only it waits here. */
  private doneBeforeDeadLetter(message: CallbackParts, partition: string | undefined, signal: AbortSignal) {
    const sub = this.deps.subscriptions.get(this.subscriptionId);
    if (!sub || !decidedByOneBridge(sub)) return undefined;
    return this.earlier.doneBeforeDeadLetter(message.webhookId, partition, signal);
  }

  private async doneByEarlierOwner(done: DoneOutcome, signal: AbortSignal): Promise<void> {
    // Its subscription is read as an attempt reads it, from a view synced within the lease (SubscriptionEnds).
    const waiting = this.clearance.wait(signal);
    if (waiting) await waiting;
    return this.ends.afterEarlierOwner(done, signal);
  }

  /**
   * A `once` callback to event kinds goes to its subscription's one deciding bridge (once-callbacks.ts), in its turn
   * and before its event is committed; not once the subscription has ended.
   */
  private handOn(message: CallbackParts, signal: AbortSignal): Promise<void> | undefined {
    if (this.deps.subscriptions.get(this.subscriptionId)?.status !== 'active') return undefined;
    const record = onceCallbackRecord(this.deps.topics.onceCallbacks, message);
    return untilDone(signal, this.step('hand on a once callback'), () => this.deps.publisher.publish([record]));
  }

  private async deadLetter(
    message: CallbackParts,
    { run, attempt: attempts }: AttemptOf,
    lastError: string,
    signal: AbortSignal,
  ): Promise<void> {
    const records = deadLetterRecords(this.deps.topics, {
      subscriptionId: this.subscriptionId,
      message,
      run,
      attempts,
      lastError,
    });
    await untilDone(signal, this.step('dead-letter the callback'), () => this.deps.publisher.publish(records));
    this.deps.metrics?.callbackAttempt('dead-lettered', 0);
    this.failureLog.tell('dead-lettered', { ...this.named(message), attempts, lastError });
  }

  /** what a log line names a callback by */
  private named(message: CallbackParts) {
    return { subscriptionId: this.subscriptionId, webhookId: message.webhookId, event: message.event };
  }

  /** a Kafka step of this callback's lane, as its retries log it (until-done.ts) */
  private step(what: string): StepOf {
    return { logger: this.deps.logger, subscriptionId: this.subscriptionId, what, failures: this.failureLog };
  }
}
