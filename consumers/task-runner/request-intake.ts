import type { StateView } from '../../src/kafka/types';
import { RecordTooLargeError } from '../../src/kafka/record-size';
import { pause } from '../../src/lib/abortable-sleep';
import type { ServiceMetrics } from '../../src/metrics/metrics';
import { problem } from '../../src/problems/problem-detail';
import { cutError } from '../../src/problems/error-text';
import { acceptTask, type NewTask } from '../../src/tasks/task-acceptance';
import type { ParsedRequest } from '../../src/tasks/task-request';
import { isSnapshot, type TaskRecord, type TaskSnapshot } from '../../src/tasks/task-snapshot';
import type { FinalEventWriter, FinalJob } from './final-event';
import { TaskJournal, type ExecutionDeps } from './task-execution';

/** What one record's handling needs: where it came from and who may write for it. */
export interface Job extends FinalJob {
  exec: ExecutionDeps;
}

export interface IntakeDeps {
  view: StateView<TaskRecord>;
  finals: FinalEventWriter;
  kafkaTimeoutMs: number;
  metrics?: ServiceMetrics;
}

type Rejected = Extract<ParsedRequest, { ok: false }>;

/**
 * How a request becomes a task the runner may run: the snapshot the api committed with it, or, for a request a
 * client produced to Kafka itself, one the runner writes as the api would. A request no run can use ends in
 * task.failed with the reasons, never in silence.
 */
export class RequestIntake {
  constructor(private readonly deps: IntakeDeps) {}

  /** The snapshot committed with an api request reaches this view shortly; wait for it rather than accept twice. */
  async snapshotOf(taskId: string, expected: boolean, handBack: AbortSignal): Promise<TaskSnapshot | undefined> {
    const deadline = Date.now() + (expected ? this.deps.kafkaTimeoutMs : 0);
    for (;;) {
      const seen = this.deps.view.get(taskId);
      if (isSnapshot(seen) || Date.now() >= deadline || handBack.aborted) return isSnapshot(seen) ? seen : undefined;
      await pause(20, handBack);
    }
  }

  /**
   * The snapshot of an api request's task once the view has read everything committed until now; undefined: the task
   * was forgotten (DELETE, or its retention). The api commits its request with the task's snapshot, in one
   * transaction, so such a view holds one or the other's tombstone. A Kafka failure of the sync is thrown: the
   * request is tried again, never taken for new.
   */
  async syncedSnapshot(taskId: string): Promise<TaskSnapshot | undefined> {
    await this.deps.view.syncedSince(Date.now(), this.deps.kafkaTimeoutMs);
    const seen = this.deps.view.get(taskId);
    return isSnapshot(seen) ? seen : undefined;
  }

  /** A client's request accepted here; one whose task.accepted would be larger than Kafka takes is rejected. */
  async acceptOrReject(job: Job, task: Omit<NewTask, 'taskId'>): Promise<TaskSnapshot | 'done' | 'retry'> {
    try {
      return await this.accept(job, task);
    } catch (err) {
      if (!(err instanceof RecordTooLargeError)) throw err;
      // task.accepted carries the input: one larger than Kafka takes is refused, as POST /tasks answers 413.
      const tooLarge = problem('invalid-field', `/input is ${err.bytes} bytes as an event, more than ${err.limit}`, {
        instance: '/input',
      });
      return this.reject(job, { ok: false, type: task.type, tenant: task.tenant, errors: [tooLarge] }, true);
    }
  }

  async reject(job: Job, parsed: Rejected, keyed: boolean): Promise<'done' | 'retry'> {
    const seen = this.deps.view.get(job.taskId);
    const rejected = { tenant: parsed.tenant, type: parsed.type, input: undefined };
    const snapshot = isSnapshot(seen) ? seen : await this.accept(job, rejected);
    const detail = keyed
      ? 'The task request is invalid; see errors.'
      : 'The task request has no valid key (task id); see errors.';
    const failure = problem('task-request-invalid', detail, { errors: parsed.errors.map(cutError) });
    return this.deps.finals.finish(job, new TaskJournal(snapshot, job.exec), {
      kind: 'task.failed',
      data: { problem: failure },
    });
  }

  private async accept(job: Job, task: Omit<NewTask, 'taskId'>): Promise<TaskSnapshot> {
    const snapshot = await acceptTask(
      { ...job.exec, timeoutMs: this.deps.kafkaTimeoutMs },
      { taskId: job.taskId, ...task, trace: job.exec.trace },
    );
    this.deps.metrics?.taskAccepted();
    return snapshot;
  }
}
