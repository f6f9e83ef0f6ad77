/**
 * Whether a consumer-group member may still act for the partitions it was assigned, without a round trip to Kafka.
 *
 * The coordinator keeps a member, and its assignment, until it has heard nothing from it for the session timeout; a
 * partition moves to another member only in a later generation, which needs this member to rejoin (it then learns
 * its new assignment), to leave, or to have been silent for a whole session (or the rebalance timeout, which the
 * group consumer keeps at least as long). So a member whose last session refresh was sent less than a session ago,
 * and that has seen no rebalance begin and has not left since it joined, still holds what it was assigned.
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
  /** since the latest join, a rebalance began or the member left: what it held may already be another's */
  private unsettled = false;
  private readonly waiters = new Set<() => void>();

  /** A join completed: `startedAt` is when it began (the coordinator refreshed the session after that). */
  joined(startedAt: number, sessionTimeoutMs: number): void {
    this.sessionTimeoutMs = sessionTimeoutMs;
    this.unsettled = false;
    this.refresh(startedAt);
  }

  /** A heartbeat sent at `sentAt` was answered without an error. */
  heartbeat(sentAt: number): void {
    this.refresh(sentAt);
  }

  /**
   * What the member holds may be another's from now on: a rebalance began (it goes to rejoin), it crashed (kafkajs
   * leaves the group first) or it was replaced. Nothing is held until its next join says what is; a heartbeat
   * answered meanwhile does not bring it back.
   */
  lost(): void {
    this.unsettled = true;
  }

  held(now = Date.now()): boolean {
    return !this.unsettled && now - this.refreshedAt < this.sessionTimeoutMs / 2;
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
