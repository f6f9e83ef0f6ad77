import { pause } from '../../src/lib/abortable-sleep';
import type { DeliveredCallbacks, DoneOutcome } from './delivered-callbacks';
import { untilDone, type StepOf } from './until-done';

export interface EarlierOwnerDeps {
  /** callbacks the delivery history shows done; without it, nothing of an earlier owner is known */
  delivered?: DeliveredCallbacks;
  callbacks: { timeoutMs: number };
  kafkaTimeoutMs: number;
  /** when this bridge began offering the partition (topic and partition as the bridge keys them), if it still does */
  ownedSince?(partition: string): number | undefined;
}

/**
 * A callback whose partition this bridge took over may still be on the wire from the partition's earlier owner: a
 * bridge that hands its work back lets a request under way finish, and records its answer. While this lane retries
 * the same callback (same webhook-id), a receiver that turns the repeat away (409 for a request it is still handling,
 * 503 while busy) makes it fail here although the earlier request is accepted. The history then shows the callback
 * delivered, and the lane stops: a `once` subscription is ended as the earlier owner would have.
 */
export class EarlierOwner {
  constructor(
    private readonly deps: EarlierOwnerDeps,
    private readonly step: StepOf,
  ) {}

  /** How the history shows the callback done, by an earlier owner (this lane's own attempts are not done yet). */
  doneElsewhere(webhookId: string): DoneOutcome | undefined {
    return this.deps.delivered?.outcomeOf(webhookId);
  }

  /**
   * Before a `once` callback to event kinds is dead-lettered: a callback the earlier owner delivered, dead-lettered
   * here, would let the next event be sent too, a second accepted callback. So this waits until the earlier owner's
   * request of it has ended and its answer is recorded (CALLBACK_TIMEOUT_MS, then KAFKA_TIMEOUT_MS for the record,
   * after the partition became this bridge's: the request began before), reads the history again, and says how it
   * shows the callback done. With the default retries a dead letter comes minutes later, and nothing is waited for.
   */
  async doneBeforeDeadLetter(webhookId: string, partition: string | undefined, signal: AbortSignal) {
    const since = partition === undefined ? undefined : this.deps.ownedSince?.(partition);
    const { delivered } = this.deps;
    if (since === undefined || delivered === undefined) return this.doneElsewhere(webhookId);
    const waitMs = since + this.deps.callbacks.timeoutMs + this.deps.kafkaTimeoutMs - Date.now();
    if (waitMs > 0) {
      await pause(waitMs, signal);
      const now = Date.now();
      await untilDone(signal, this.step, () => delivered.view.syncedSince(now, this.deps.kafkaTimeoutMs));
    }
    return this.doneElsewhere(webhookId);
  }
}
