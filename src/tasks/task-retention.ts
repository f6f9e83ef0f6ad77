import type { Logger } from '../logger';
import { startPeriodicSweep, type StopSweeping } from '../lib/periodic-sweep';
import type { TaskStore } from './task-store';

/** tasks tombstoned per transaction: two records each (snapshot, cancellation request) */
const TASKS_PER_WRITE = 250;

/**
 * How long a cancel request without its task is kept, at least: longer than any view reads a cancel before its task's
 * snapshot (a partition held by a dead writer's transaction until it times out).
 */
const ORPHAN_CANCEL_GRACE_MS = 60000;

/** How often the api looks for expired tasks: a tenth of the window, between 0.5 s and a minute. */
export function sweepIntervalMs(retentionMs: number): number {
  return Math.min(60000, Math.max(500, Math.floor(retentionMs / 10)));
}

/**
 * Forgets finished tasks once TASK_RETENTION_MS has passed: every api
 * instance sweeps its view of the tasks topic and tombstones what expired, so
 * a task is tombstoned at most one interval (plus a write) after its window.
 * Several instances may tombstone the same task; a second tombstone changes
 * nothing. Reads do not wait for the sweep: TaskStore hides an expired task at
 * once.
 */
export class TaskRetention {
  private stopSweeping: StopSweeping = () => undefined;
  private stopped = false;
  readonly intervalMs: number;

  constructor(
    private readonly store: TaskStore,
    private readonly logger: Logger,
  ) {
    this.intervalMs = sweepIntervalMs(store.retentionMs);
  }

  /** Once; a second call restarts the schedule rather than run two. */
  start(): void {
    this.stopSweeping();
    this.stopSweeping = startPeriodicSweep({
      intervalMs: this.intervalMs,
      sweep: () => this.sweep(),
      logger: this.logger,
      failure: 'could not forget expired tasks; trying again next time',
    });
  }

  stop(): void {
    this.stopped = true;
    this.stopSweeping();
  }

  /** One pass; resolves with the number of tasks tombstoned (cancel requests left behind are not counted). */
  async sweep(now = Date.now()): Promise<number> {
    const expired = this.store.expiredTaskIds(now);
    for (let i = 0; i < expired.length && !this.stopped; i += TASKS_PER_WRITE) {
      await this.store.forget(expired.slice(i, i + TASKS_PER_WRITE), { wait: false });
    }
    if (expired.length > 0) this.logger.info({ tasks: expired.length }, 'forgot finished tasks past TASK_RETENTION_MS');
    const orphans = this.store.orphanCancels(Math.max(this.store.retentionMs, ORPHAN_CANCEL_GRACE_MS), now);
    for (let i = 0; i < orphans.length && !this.stopped; i += 2 * TASKS_PER_WRITE) {
      await this.store.forgetCancels(orphans.slice(i, i + 2 * TASKS_PER_WRITE));
    }
    if (orphans.length > 0) this.logger.info({ cancels: orphans.length }, 'forgot cancel requests of forgotten tasks');
    return expired.length;
  }
}
