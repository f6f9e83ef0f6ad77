import { problem, type ProblemDetail } from '../../src/problems/problem-detail';
import type { OutgoingRecord, PublishOptions, Publisher, StateView, WriteChain } from '../../src/kafka/types';
import { MAX_SEND_BYTES, RecordTooLargeError, tooLarge } from '../../src/kafka/record-size';
import { writeThenRead } from '../../src/kafka/read-your-writes';
import type { Logger } from '../../src/logger';
import { taskEventRecords, type TaskEventKind, type TaskTopics } from '../../src/tasks/task-events';
import { isSnapshot, type TaskRecord, type TaskSnapshot } from '../../src/tasks/task-snapshot';
import type { TraceContext } from '../../src/tracing/trace-context';
import { TaskProblem, type TaskContext, type TaskType } from '../../src/tasks/task-type';
import { isoNow } from '../../src/lib/iso-now';

/** Why a run's signal was aborted, when it was not handed back. */
export class Cancelled extends Error {
  constructor() {
    super('task cancelled');
    this.name = 'Cancelled';
  }
}
export class TimedOut extends Error {
  constructor(readonly ms: number) {
    super(`task ran longer than ${ms} ms`);
    this.name = 'TimedOut';
  }
}
/** A task past its deadline (timeoutMs from its first start, across runs) fails, saying so. */
export function timedOutOutcome(ms: number): Outcome {
  const detail = `The task ran longer than ${ms} ms (from its first start, across runs) and was stopped.`;
  return { kind: 'task.failed', data: { problem: problem('task-timed-out', detail) } };
}

/**
 * An event the handler sent (progress, output) is larger than Kafka takes. Running it again would send it again, so
 * the run stops and the task fails, saying why; the events before it stand (nothing of the large one was written).
 */
export class OutputTooLarge extends Error {
  constructor(readonly tooLarge: RecordTooLargeError) {
    super(tooLarge.message);
    this.name = 'OutputTooLarge';
  }
}
/** One of the run's writes failed: its later events can no longer land, so the run stops and is tried again. */
export class RunInterrupted extends Error {
  constructor() {
    super('a write of the run failed');
    this.name = 'RunInterrupted';
  }
}

export interface ExecutionDeps {
  publisher: Publisher;
  view: StateView<TaskRecord>;
  topics: TaskTopics;
  resources: TaskContext<unknown>['resources'];
  logger: Logger;
  kafkaTimeoutMs: number;
  /** the run's span: its events name it as their parent */
  trace?: TraceContext;
}

export type Outcome =
  | { kind: 'task.succeeded'; data: { result: unknown } }
  | { kind: 'task.failed'; data: { problem: ProblemDetail } }
  | { kind: 'task.cancelled'; data: Record<string, never> };

/**
 * One task's snapshot as this run sees it, and the events it publishes. Every
 * event is written with the snapshot it leads to. Events before the final one
 * (task.started included) are enqueued without waiting, so the publisher
 * batches them with other tasks' writes; their order holds because the
 * publisher keeps its queue's order, and they form one chain: once one of
 * them fails, every later one (the final event too) is refused unsent, so a
 * reader never sees a run's later event without its earlier ones.
 */
export class TaskJournal {
  private pending: Promise<unknown>[] = [];
  private failed = false;
  /** the first event the handler sent that Kafka would not take (OutputTooLarge) */
  private firstTooLarge: RecordTooLargeError | undefined;
  /** set once the final event is being written: nothing the handler still sends may follow it */
  private closed = false;
  private readonly interruption = new AbortController();
  readonly chain: WriteChain = { broken: false };

  /** `generation`: the publisher's initialization the run was checked under; its writes land only under it */
  constructor(
    private snapshot: TaskSnapshot,
    private readonly deps: ExecutionDeps,
    private readonly generation?: number,
  ) {}

  get current(): TaskSnapshot {
    return this.snapshot;
  }

  /** aborts (RunInterrupted) when an enqueued write fails: running the handler on would be for nothing */
  get interrupted(): AbortSignal {
    return this.interruption.signal;
  }

  /** Waits until the event and its snapshot are in Kafka and in this process's view. */
  async write(
    kind: TaskEventKind,
    change: Partial<TaskSnapshot>,
    data: unknown,
    options: PublishOptions = {},
  ): Promise<void> {
    this.closed = true;
    const records = this.next(kind, change, data);
    const publish = (timeoutMs: number) => this.deps.publisher.publish(records, { ...options, timeoutMs });
    await writeThenRead(this.deps.view, this.deps.kafkaTimeoutMs, publish);
  }

  enqueue(kind: TaskEventKind, change: Partial<TaskSnapshot>, data: unknown): void {
    if (this.closed) return;
    const { progress } = this.snapshot;
    const records = this.next(kind, change, data);
    // Seen here, before the publisher refuses it: a handler that returns right after sending it has not succeeded.
    const oversized = tooLarge(records, MAX_SEND_BYTES);
    if (oversized) return this.refused(oversized, progress);
    const options = { generation: this.generation, chain: this.chain };
    const sent = this.deps.publisher.publish(records, options).catch((err: unknown) => {
      if (err instanceof RecordTooLargeError) return this.refused(err, progress);
      this.failed = true;
      this.interruption.abort(new RunInterrupted());
    });
    this.pending.push(sent);
  }

  /** the first event the handler sent that Kafka would not take; the run then ends in task.failed */
  get oversized(): RecordTooLargeError | undefined {
    return this.firstTooLarge;
  }

  /**
   * Nothing of the event was sent and the chain holds. The snapshot's progress (a handler's message, the one part of
   * an event it keeps) goes back to what was written, or the final event would carry it and be too large as well.
   */
  private refused(err: RecordTooLargeError, progress: TaskSnapshot['progress']): void {
    this.snapshot = { ...this.snapshot, progress };
    this.firstTooLarge ??= err;
    this.closed = true;
    this.interruption.abort(new OutputTooLarge(err));
  }

  async flush(): Promise<boolean> {
    await Promise.all(this.pending);
    this.pending = [];
    return !this.failed;
  }

  private next(kind: TaskEventKind, change: Partial<TaskSnapshot>, data: unknown): OutgoingRecord[] {
    this.snapshot = { ...this.snapshot, ...change, updatedAt: isoNow() };
    return taskEventRecords(this.deps.topics, kind, this.snapshot, data, this.deps.trace);
  }
}

/** The snapshot in this process's view, if it is newer than the given attempt: another run took over. */
export function supersededBy(view: StateView<TaskRecord>, taskId: string, attempt: number): TaskSnapshot | undefined {
  const seen = view.get(taskId);
  return isSnapshot(seen) && seen.attempt > attempt ? seen : undefined;
}

/** The task.failed problem of a run whose event (the final one too) was larger than Kafka takes. */
export function tooLargeProblem(err: RecordTooLargeError): ProblemDetail {
  return problem(
    'task-failed',
    `An event of the task would have been ${err.bytes} bytes, more than the ${err.limit} Kafka takes in one record.`,
  );
}

/** Runs the handler until it returns, throws, or its signal aborts; maps each to the task's final event. */
export async function execute(
  type: TaskType,
  journal: TaskJournal,
  input: unknown,
  signal: AbortSignal,
  deps: ExecutionDeps,
): Promise<Outcome | 'handed-back' | 'interrupted'> {
  const t = journal.current;
  const context: TaskContext<unknown> = {
    taskId: t.taskId,
    tenant: t.tenant,
    input,
    attempt: t.attempt,
    signal,
    resources: deps.resources,
    progress: (current, total, message) =>
      journal.enqueue(
        'task.progress',
        { progress: { current, total, ...(message ? { message } : {}) } },
        { current, total, ...(message ? { message } : {}) },
      ),
    output: (data) => journal.enqueue('task.output', {}, data),
  };
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  try {
    const result = await Promise.race([type.run(context), aborted]);
    // A handler that returns right after sending an event too large for Kafka did not succeed: that event is lost.
    if (journal.oversized) throw new OutputTooLarge(journal.oversized);
    return { kind: 'task.succeeded', data: { result } };
  } catch (err) {
    const reason = signal.aborted ? signal.reason : err;
    if (reason instanceof Cancelled) return { kind: 'task.cancelled', data: {} };
    if (reason instanceof RunInterrupted) return 'interrupted';
    if (reason instanceof OutputTooLarge) {
      deps.logger.warn({ taskId: t.taskId, type: t.type, err: reason.tooLarge }, 'task event too large for Kafka');
      return { kind: 'task.failed', data: { problem: tooLargeProblem(reason.tooLarge) } };
    }
    if (reason instanceof TimedOut) return timedOutOutcome(reason.ms);
    if (signal.aborted) return 'handed-back';
    if (err instanceof TaskProblem)
      return { kind: 'task.failed', data: { problem: problem('task-failed', err.message, err.problem) } };
    deps.logger.warn({ taskId: t.taskId, type: t.type, err }, 'task handler threw');
    return {
      kind: 'task.failed',
      data: { problem: problem('task-failed', 'The task failed with an unexpected error.') },
    };
  }
}
