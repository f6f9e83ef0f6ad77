import type { MembershipLease } from '../../src/kafka/membership-lease';
import { LEASE_SLACK_MS, SUBSCRIPTIONS_LEASE_MS } from '../../src/subscriptions/subscription-lease';
import type { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import { LaneStopped } from './lane-job';
import { untilDone, type StepOf } from './until-done';

export interface ClearanceDeps {
  subscriptions: SubscriptionStore;
  /** the bridge's group membership (membership-lease.ts); without it, membership is not checked */
  membership?: Pick<MembershipLease, 'held' | 'whenHeld'>;
  kafkaTimeoutMs: number;
}

/**
 * What a lane waits for before it starts a callback:
 * - its subscriptions view within its lease, so every cancellation answered 202 before now is seen
 *   (subscription-lease.ts);
 * - the bridge still a member of its group, holding what it was assigned (membership-lease.ts): a bridge that was
 *   paused past its session does not send, after later events, callbacks another bridge has since delivered. If the
 *   member was dropped meanwhile, its work is handed back (the signal aborts) and nothing is sent.
 */
export class SendClearance {
  constructor(
    private readonly deps: ClearanceDeps,
    private readonly step: (what: string) => StepOf,
  ) {}

  /**
   * Undefined when the callback may start now: most callbacks of a busy lane get that answer, without a promise
   * (each costs, and more where async hooks are on). Otherwise a promise that resolves once it may, or rejects with
   * LaneStopped once its event is handed back.
   */
  wait(signal: AbortSignal): Promise<void> | undefined {
    if (this.subscriptionsFresh() && this.member()) return undefined;
    return this.waited(signal);
  }

  private async waited(signal: AbortSignal): Promise<void> {
    for (;;) {
      const { membership } = this.deps;
      if (membership && !membership.held() && !(await membership.whenHeld(signal))) throw new LaneStopped();
      if (!this.subscriptionsFresh()) await this.syncSubscriptions(signal);
      // Handed back while it waited: the event is the next owner's (a stop, a revocation, a rejoin).
      if (signal.aborted) throw new LaneStopped();
      // A sync is short against the membership's lease; checked again all the same.
      if (this.member()) return;
    }
  }

  private member(): boolean {
    return this.deps.membership?.held() ?? true;
  }

  /** Synced within the last half lease: nothing to wait for and no early sync due. */
  private subscriptionsFresh(): boolean {
    return this.deps.subscriptions.view.syncedAt >= Date.now() - SUBSCRIPTIONS_LEASE_MS / 2;
  }

  /** One sync serves every lane for the length of a lease; the next is begun half a lease early. */
  private async syncSubscriptions(signal: AbortSignal): Promise<void> {
    const { view } = this.deps.subscriptions;
    void view.syncedSince(Date.now() - SUBSCRIPTIONS_LEASE_MS / 2, this.deps.kafkaTimeoutMs).catch(() => undefined);
    for (;;) {
      const since = Date.now() - SUBSCRIPTIONS_LEASE_MS;
      await untilDone(signal, this.step('sync subscriptions'), () => view.syncedSince(since, this.deps.kafkaTimeoutMs));
      // A sync that took a while may have begun more than a lease before now: then ask again.
      if (Date.now() - SUBSCRIPTIONS_LEASE_MS <= since + LEASE_SLACK_MS) return;
    }
  }
}
