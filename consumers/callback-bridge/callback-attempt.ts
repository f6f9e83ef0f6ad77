import { isoNow } from '../../src/lib/iso-now';
import { attemptKey, type DeliveryAttempt } from '../../src/subscriptions/delivery-attempt';
import { formatTraceparent, parseTraceparent } from '../../src/tracing/trace-context';
import { PROPAGATION_ONLY } from '../../src/tracing/tracer';
import type { LaneDeps } from './delivery-lanes';
import { LaneStopped, type CallbackParts } from './lane-job';
import { backoffMs, sendCallback, type CallbackMessage, type CallbackResult } from './send-callback';
import type { SendClearance } from './send-clearance';
import { endingReason, type SubscriptionEnds } from './subscription-ends';
import { untilDone, type StepOf } from './until-done';

/** Which attempt of which handling of an event (attemptKey). */
export interface AttemptOf {
  run: string;
  attempt: number;
}

/** An attempt's result, with when the next one is due if it failed and may be tried again. */
export type AttemptResult = CallbackResult & { retryInMs?: number };

/**
 * One subscription's callback attempts: each is sent (a client span of the event's trace), recorded in the delivery
 * history, and ends the subscription when its answer does. The lane (delivery-lanes.ts) decides what is attempted
 * when, and keeps the order.
 */
export class CallbackAttempts {
  constructor(
    private readonly subscriptionId: string,
    private readonly deps: LaneDeps,
    private readonly clearance: SendClearance,
    private readonly ends: SubscriptionEnds,
    /** the lane's Kafka steps, as their retries log them */
    private readonly step: (what: string) => StepOf,
  ) {}

  /**
   * One attempt, unless the subscription has ended (undefined). Its history record is pushed on `writes`: the lane's
   * next callback need not wait for it, the event's commit does.
   */
  async once(
    message: CallbackParts,
    { run, attempt }: AttemptOf,
    signal: AbortSignal,
    writes: Promise<void>[],
  ): Promise<AttemptResult | undefined> {
    // A handed-back event is not sent again: the retry loop's pause ends at once on the abort, and comes here.
    if (signal.aborted) throw new LaneStopped();
    const waiting = this.clearance.wait(signal);
    if (waiting) await waiting;
    const sub = this.deps.subscriptions.get(this.subscriptionId);
    if (!sub || sub.status !== 'active') return undefined;
    // Each attempt is a client span of the event's trace; the receiver gets that span as its parent.
    const tracer = this.deps.tracer ?? PROPAGATION_ONLY;
    const span = tracer.start(`callback ${message.event}`, 'client', parseTraceparent(message.traceparent));
    const sent: CallbackMessage = {
      subscriptionId: message.subscriptionId,
      callbackUrl: sub.callbackUrl,
      secret: sub.secret,
      webhookId: message.webhookId,
      event: message.event,
      taskId: message.taskId,
      body: message.body,
      traceparent: formatTraceparent(span.context),
    };
    const result = await sendCallback(sent, this.deps.agent, this.deps.callbacks.timeoutMs);
    span.end(result.outcome === 'failed' ? result.error : undefined);
    // Chosen here (its jitter once) so the history can say when the next attempt is due.
    const { maxAttempts, backoffBaseMs, backoffMaxMs } = this.deps.callbacks;
    const retryInMs =
      result.outcome === 'failed' && attempt < maxAttempts
        ? backoffMs(attempt, backoffBaseMs, backoffMaxMs, result.retryAfterMs)
        : undefined;
    this.deps.metrics?.callbackAttempt(result.outcome, result.latencyMs / 1000);
    // One shape for every attempt; JSON leaves the undefined parts out.
    const record: DeliveryAttempt = {
      subscriptionId: sub.id,
      webhookId: message.webhookId,
      event: message.event,
      taskId: message.taskId || undefined,
      attempt,
      at: isoNow(),
      outcome: result.outcome,
      latencyMs: result.latencyMs,
      statusCode: result.statusCode,
      error: result.outcome === 'failed' ? result.error : undefined,
      nextAttemptAt: retryInMs === undefined ? undefined : new Date(Date.now() + retryInMs).toISOString(),
    };
    const history = { topic: this.deps.topics.deliveries, key: attemptKey(record, run), value: JSON.stringify(record) };
    // Tried once even when the event is being handed back: the attempt happened (maybe delivered), so it is history.
    const recorded = untilDone(signal, this.step('record the attempt'), () => this.deps.history.record(history), true);
    recorded.catch(() => undefined); // settled by the job (Promise.all), or dropped with a handed-back event
    writes.push(recorded);
    const reason = endingReason(result.outcome, sub);
    if (reason) {
      // The attempt is history before the subscription ends: ended first, a crash between the two would leave a
      // subscription cancelled as delivered with no delivery in its history, and nothing would deliver it again.
      await recorded.catch(() => undefined);
      await this.ends.end(sub, reason, signal, true);
    }
    return { ...result, retryInMs };
  }
}
