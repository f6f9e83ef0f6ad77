import { v4 as uuidv4 } from 'uuid';
import {
  KafkaUnavailableError,
  type KeyedCreation,
  type OutgoingRecord,
  type Publisher,
  type StateView,
  type ViewSource,
  type WrittenRecord,
} from '../kafka/types';
import type { ServiceMetrics } from '../metrics/metrics';
import { traceHeaders, type TraceContext } from '../tracing/trace-context';
import { writeThenRead } from '../kafka/read-your-writes';
import { acceptTask } from './task-acceptance';
import type { TaskTopics } from './task-events';
import type { TaskRequest } from './task-request';
import { FinalWaiters } from './final-waiters';
import {
  cancelKey,
  cancelOf,
  isFinal,
  isSnapshot,
  TASKS_VIEW,
  type CancelRequest,
  type TaskRecord,
  type TaskSnapshot,
  type TaskStatus,
} from './task-snapshot';
import { isoNow } from '../lib/iso-now';
import { inTurnWithin, KeyedSerial } from '../lib/keyed-serial';

export interface TaskStoreDeps {
  view: StateView<TaskRecord>;
  publisher: Publisher;
  topics: TaskTopics & { taskRequests: string };
  timeoutMs: number;
  /** finished tasks are forgotten this long after they finished (TASK_RETENTION_MS) */
  retentionMs: number;
  metrics?: Pick<ServiceMetrics, 'taskAccepted'>;
}

export interface Submission {
  tenant: string;
  type: string;
  input: unknown;
  /** records to write in the same transaction (the subscription a callbackUrl creates) */
  alongside?: (taskId: string) => OutgoingRecord[];
  /** once they are written: their own view applies them, so this process reads them at once (read-your-writes) */
  alongsideWritten?: (records: WrittenRecord[]) => void;
  subscription?: string;
  /** chosen by a caller that must name the task before it exists (an Idempotency-Key's answer); else UUIDv4 */
  taskId?: string;
  /** the request's span: the task request and task.accepted name it, and so the run joins the request's trace */
  trace?: TraceContext;
  /** the request's creation under its Idempotency-Key: the acceptance transaction carries the key's answer */
  idempotency?: KeyedCreation;
}

/** When a finished task is forgotten; undefined while it is not finished. */
export function expiresAt(t: TaskSnapshot, retentionMs: number): number | undefined {
  if (!isFinal(t.status)) return undefined;
  return Date.parse(t.finishedAt ?? t.updatedAt) + retentionMs;
}

/**
 * The api's side of tasks: submit, read, list, wait, ask to cancel, forget. It
 * never runs task code. A finished task past its retention is not found, even
 * in the moment before the sweeper's tombstone reaches the view.
 */
export class TaskStore {
  private readonly finals: FinalWaiters;
  private readonly forgets = new KeyedSerial();

  constructor(private readonly deps: TaskStoreDeps) {
    this.finals = new FinalWaiters(deps.view);
  }

  /** The store on this process's view of the tasks topic. */
  static async open(views: ViewSource, deps: Omit<TaskStoreDeps, 'view'>): Promise<TaskStore> {
    return new TaskStore({ ...deps, view: await views.view(TASKS_VIEW) });
  }

  get retentionMs(): number {
    return this.deps.retentionMs;
  }

  get(taskId: string, now = Date.now()): TaskSnapshot | undefined {
    const r = this.deps.view.get(taskId);
    return isSnapshot(r) && !this.expired(r, now) ? r : undefined;
  }

  cancelRequested(taskId: string): boolean {
    return cancelOf(this.deps.view.get(cancelKey(taskId)), this.get(taskId)) !== undefined;
  }

  list(tenant: string, filter: { type?: string; status?: TaskStatus }): TaskSnapshot[] {
    const now = Date.now();
    const out: TaskSnapshot[] = [];
    for (const r of this.deps.view.values()) {
      if (!isSnapshot(r) || r.tenant !== tenant || this.expired(r, now)) continue;
      if ((filter.type && r.type !== filter.type) || (filter.status && r.status !== filter.status)) continue;
      out.push(r);
    }
    return out.sort((a, b) =>
      a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.taskId < b.taskId ? -1 : 1,
    );
  }

  /** Finished tasks whose retention has passed and that the view still holds: the sweeper's work. */
  expiredTaskIds(now = Date.now()): string[] {
    const out: string[] = [];
    for (const r of this.deps.view.values()) if (isSnapshot(r) && this.expired(r, now)) out.push(r.taskId);
    return out;
  }

  /**
   * Tasks whose cancel request this view holds without the task, asked `graceMs` ago or earlier: a cancel written after
   * its task's DELETE (by an instance that had not read the DELETE yet) is left behind, and no retention of its task
   * would ever tombstone it. The grace covers a view that has read the cancel but not yet its task's snapshot.
   */
  orphanCancels(graceMs: number, now = Date.now()): string[] {
    const out: string[] = [];
    for (const r of this.deps.view.values()) {
      if (isSnapshot(r) || this.deps.view.get(r.taskId) !== undefined) continue;
      if (!(Date.parse(r.requestedAt) + graceMs > now)) out.push(r.taskId);
    }
    return out;
  }

  /** Tombstones cancel requests alone: their tasks' keys may hold a task made since under the same id. */
  async forgetCancels(taskIds: string[]): Promise<void> {
    const records = taskIds.map((taskId) => ({ topic: this.deps.topics.tasks, key: cancelKey(taskId), value: null }));
    await this.deps.publisher.publish(records, { timeoutMs: this.deps.timeoutMs });
  }

  /**
   * The task request is written in the acceptance transaction, so the runner
   * can never see a request without its snapshot; the caller gets the
   * position of the task's first event.
   */
  async submit(s: Submission): Promise<TaskSnapshot> {
    const taskId = s.taskId ?? uuidv4();
    const request: TaskRequest = {
      type: s.type,
      input: s.input,
      tenant: s.tenant,
      submittedAt: isoNow(),
      accepted: true,
    };
    const snapshot = await acceptTask(
      this.deps,
      { taskId, tenant: s.tenant, type: s.type, input: s.input, subscription: s.subscription, trace: s.trace },
      [
        {
          topic: this.deps.topics.taskRequests,
          key: taskId,
          value: JSON.stringify(request),
          headers: traceHeaders(s.trace),
        },
        ...(s.alongside?.(taskId) ?? []),
      ],
      s.idempotency,
      s.alongsideWritten,
    );
    this.deps.metrics?.taskAccepted();
    return this.get(taskId) ?? snapshot;
  }

  /**
   * Resolves with the task once it is final, or gone (forgotten), or after
   * timeoutMs, or when `signal` aborts (the client left): whichever is first.
   * Woken by the view, never by polling.
   */
  async awaitFinal(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<TaskSnapshot | undefined> {
    const now = this.get(taskId);
    if (!now || isFinal(now.status) || timeoutMs <= 0) return now;
    await this.finals.wait(taskId, timeoutMs, signal);
    return this.get(taskId);
  }

  /** requests waiting for a task to end (Prefer: wait), for tests and operators */
  get waiting(): number {
    return this.finals.size;
  }

  /** Records the request; the runner that owns the task aborts it and publishes task.cancelled. */
  async requestCancel(taskId: string): Promise<void> {
    const taskCreatedAt = this.get(taskId)?.createdAt;
    const request: CancelRequest = {
      cancel: true,
      taskId,
      requestedAt: isoNow(),
      ...(taskCreatedAt && { taskCreatedAt }),
    };
    const record = { topic: this.deps.topics.tasks, key: cancelKey(taskId), value: JSON.stringify(request) };
    await writeThenRead(this.deps.view, this.deps.timeoutMs, (timeoutMs) =>
      this.deps.publisher.publish([record], { timeoutMs }),
    );
  }

  /**
   * Tombstones finished tasks (their snapshots and any cancellation request):
   * compaction then drops them, so memory and start-up replay follow the
   * retention window. Only final tasks are ever passed here; nothing writes a
   * final task's snapshot again, so a tombstone can never erase a live task.
   * Writing one twice (two api instances sweeping) is harmless.
   */
  async forget(taskIds: string[], options: { wait: boolean; timeoutMs?: number } = { wait: true }): Promise<void> {
    const timeoutMs = options.timeoutMs ?? this.deps.timeoutMs;
    const records = taskIds.flatMap((taskId) => [
      { topic: this.deps.topics.tasks, key: taskId, value: null },
      { topic: this.deps.topics.tasks, key: cancelKey(taskId), value: null },
    ]);
    const publish = (remainingMs: number) => this.deps.publisher.publish(records, { timeoutMs: remainingMs });
    if (options.wait) await writeThenRead(this.deps.view, timeoutMs, publish);
    else await publish(timeoutMs);
  }

  /**
   * Forgets one task alone among this process's forgets of it. `check` (that the caller's task is there and finished,
   * the request's preconditions) runs at its turn: of overlapping DELETEs one forgets the task and the others find
   * it gone, where each had read it before any wrote and all answered 204.
   */
  forgetOne(taskId: string, check: () => void): Promise<void> {
    const why = 'earlier forgets of the same task took most of KAFKA_TIMEOUT_MS; nothing was written';
    return inTurnWithin(
      this.forgets,
      [taskId],
      this.deps.timeoutMs,
      () => new KafkaUnavailableError(why),
      (d) => {
        check();
        return this.forget([taskId], { wait: true, timeoutMs: d.remaining() });
      },
    );
  }

  private expired(t: TaskSnapshot, now: number): boolean {
    const at = expiresAt(t, this.deps.retentionMs);
    return at !== undefined && at <= now;
  }
}
