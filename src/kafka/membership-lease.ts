/**
 * Whether a consumer-group member may still act for the partitions it was assigned, without a round trip to Kafka.
 *
 * The coordinator keeps a member, and its assignment, until it has heard nothing from it for the session timeout; a
 * partition moves to another member only in a later generation, which needs this member to rejoin (it then learns
 * its new assignment) or to have been silent for a whole session. So a member whose last session refresh was sent
 * less than a session ago, and that has seen no rebalance begin since it joined, still holds what it was assigned.
 * The lease is half a session: the other half covers a response that took long to come back and timers that fired
 * late. Only durations on this process's clock are compared.
 *
 * What it is for: a process that was paused (SIGSTOP, a VM stall, a long GC) runs its timers on resuming before
 * kafkajs has heard from the coordinator. Without the lease, it acts on partitions another member has since taken.
 */
export class MembershipLease {
  private sessionTimeoutMs = 0;
  /** when the latest session refresh the coordinator answered was sent (a join or a heartbeat) */
  private refreshedAt = Number.NEGATIVE_INFINITY;
  /** a rebalance began after the latest join: what this member holds may already be another's */
  private rebalancing = false;
  private readonly waiters = new Set<() => void>();

  /** A join completed: `startedAt` is when it began (the coordinator refreshed the session after that). */
  joined(startedAt: number, sessionTimeoutMs: number): void {
    this.sessionTimeoutMs = sessionTimeoutMs;
    this.rebalancing = false;
    this.refresh(startedAt);
  }

  /** A heartbeat sent at `sentAt` was answered without an error. */
  heartbeat(sentAt: number): void {
    this.refresh(sentAt);
  }

  /** A rebalance began: nothing is held until the next join says what is. */
  rebalance(): void {
    this.rebalancing = true;
  }

  /** The member left, or was replaced by a fresh one: nothing is held until it joins. */
  lapse(): void {
    this.refreshedAt = Number.NEGATIVE_INFINITY;
  }

  held(now = Date.now()): boolean {
    return !this.rebalancing && now - this.refreshedAt < this.sessionTimeoutMs / 2;
  }

  /** Resolves true once the lease is held, or false once `signal` aborts (the work was handed back meanwhile). */
  async whenHeld(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted && !this.held()) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake);
          signal.removeEventListener('abort', wake);
          resolve();
        };
        this.waiters.add(wake);
        signal.addEventListener('abort', wake);
      });
    }
    return !signal.aborted;
  }

  private refresh(sentAt: number): void {
    this.refreshedAt = Math.max(this.refreshedAt, sentAt);
    for (const wake of [...this.waiters]) wake();
  }
}
