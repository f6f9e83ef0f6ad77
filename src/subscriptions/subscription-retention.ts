import type { Publisher } from '../kafka/types';
import { startPeriodicSweep, type StopSweeping } from '../lib/periodic-sweep';
import type { Logger } from '../logger';
import { sweepIntervalMs } from '../tasks/task-retention';
import { KEEP_ATTEMPTS, type DeliveryHistory } from './delivery-attempt';
import type { SubscriptionStore } from './subscription-store';

/** tombstones per transaction */
const RECORDS_PER_WRITE = 500;

export interface SubscriptionRetentionDeps {
  store: SubscriptionStore;
  history: DeliveryHistory;
  publisher: Publisher;
  deliveriesTopic: string;
  /** whether the api still holds the task (TaskStore.get): a forgotten task's subscription can get nothing more */
  taskExists: (taskId: string) => boolean;
  /** TASK_RETENTION_MS: subscriptions and attempts are kept as long as the tasks they are about */
  retentionMs: number;
  timeoutMs: number;
  logger: Logger;
}

/**
 * Bounded state for subscriptions and their delivery history, as TaskRetention is for tasks: every api instance
 * sweeps its views and tombstones cancelled subscriptions a window after they ended, a task's subscription left
 * active after its task was forgotten, and every delivery attempt a window after it was made. A task with a
 * `callbackUrl` adds a subscription and its attempts, so without this both topics, and every view of them, grow
 * with every task for ever. Two instances tombstoning the same key is harmless.
 */
export class SubscriptionRetention {
  private stopSweeping: StopSweeping = () => undefined;
  private stopped = false;
  readonly intervalMs: number;

  constructor(private readonly deps: SubscriptionRetentionDeps) {
    this.intervalMs = sweepIntervalMs(deps.retentionMs);
  }

  /** Once; a second call restarts the schedule rather than run two. */
  start(): void {
    this.stopSweeping();
    this.stopSweeping = startPeriodicSweep({
      intervalMs: this.intervalMs,
      sweep: () => this.sweep(),
      logger: this.deps.logger,
      failure: 'could not forget expired subscriptions or delivery attempts; trying again next time',
    });
  }

  stop(): void {
    this.stopped = true;
    this.stopSweeping();
  }

  /**
   * One pass; resolves with what it tombstoned: subscriptions, attempts past the window, and `trimmed` attempts, those
   * within it beyond their subscription's last KEEP_ATTEMPTS (the log line tells the two apart: trimming is a busy
   * subscription's history being kept short, not the window passing).
   */
  async sweep(now = Date.now()): Promise<{ subscriptions: number; attempts: number; trimmed: number }> {
    const { store, history, retentionMs } = this.deps;
    const subscriptions = store.expiredIds(this.deps.taskExists, now);
    for (let i = 0; i < subscriptions.length && !this.stopped; i += RECORDS_PER_WRITE) {
      await store.forget(subscriptions.slice(i, i + RECORDS_PER_WRITE));
    }
    const { expired, trimmed } = history.expiredKeys(retentionMs, now);
    const attempts = [...expired, ...trimmed];
    for (let i = 0; i < attempts.length && !this.stopped; i += RECORDS_PER_WRITE) {
      const keys = attempts.slice(i, i + RECORDS_PER_WRITE);
      const tombstones = keys.map((key) => ({ topic: this.deps.deliveriesTopic, key, value: null }));
      await this.deps.publisher.publish(tombstones, { timeoutMs: this.deps.timeoutMs });
    }
    const forgotten = { subscriptions: subscriptions.length, attempts: expired.length, trimmed: trimmed.length };
    if (forgotten.subscriptions + forgotten.attempts > 0) {
      this.deps.logger.info(forgotten, 'forgot subscriptions and delivery attempts past TASK_RETENTION_MS');
    }
    if (forgotten.trimmed > 0) {
      this.deps.logger.info({ attempts: forgotten.trimmed }, `forgot delivery attempts past the last ${KEEP_ATTEMPTS}`);
    }
    return forgotten;
  }
}
