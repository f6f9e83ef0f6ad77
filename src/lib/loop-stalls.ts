/** How often the heartbeat is due. */
const BEAT_MS = 100;
/**
 * A heartbeat later than this past its due time means the process did not run meanwhile. Low: a stall of a few
 * hundred milliseconds is enough for a cancel to land unseen (a chaos audit lost cancels to 0.3-0.55 s stalls at
 * 500), and a false alarm on a busy machine costs one view sync.
 */
export const STALL_MS = 150;

/** Whether this process stopped running at some point since a given time. */
export interface Stalls {
  /** `since` is a `performance.now()` time */
  since(since: number): boolean;
}

/**
 * Notices when this process did not run for a while: a SIGSTOP, a frozen VM, a long GC pause, a handler that blocks.
 * When it runs again, the timers due meanwhile fire in their due order, so a task's handler may settle before the
 * timer of its deadline; and what the process's views show is as old as the stall, since their fetches' answers are
 * read only after the timers. A decision that rests on a timer having fired, or on the view being recent, checks here.
 */
export class LoopStalls implements Stalls {
  private lastBeat = performance.now();
  private lastStallEnd = -Infinity;
  private timer: NodeJS.Timeout | undefined;

  /** Starts the heartbeat; it never keeps the process alive. */
  start(): this {
    if (this.timer) return this;
    this.lastBeat = performance.now();
    this.timer = setInterval(() => this.beat(), BEAT_MS);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * True when a stall ended after `since`, or one is under way: the code asking may run right after a stall, before
   * the heartbeat had its turn (a timer due earlier than the beat fired first), so an overdue beat counts too.
   */
  since(since: number): boolean {
    return this.lastStallEnd >= since || performance.now() - this.lastBeat > BEAT_MS + STALL_MS;
  }

  private beat(): void {
    const now = performance.now();
    if (now - this.lastBeat > BEAT_MS + STALL_MS) this.lastStallEnd = now;
    this.lastBeat = now;
  }
}
