import type { ProblemDetail } from '../problems/problem-detail';
import type { StoredResource } from '../resources/resource-store';

/** What a task's handler gets: its input, an AbortSignal, and ways to report. */
export interface TaskContext<I> {
  taskId: string;
  tenant: string;
  input: I;
  /** 1 on the first run; higher when a run was interrupted (runner crash) and the task is run again */
  attempt: number;
  /** aborted when the task is cancelled, times out, or its runner hands it back */
  signal: AbortSignal;
  /** publishes task.progress; returns at once, events keep their order */
  progress(current: number, total: number, message?: string): void;
  /** publishes task.output with the given data */
  output(data: unknown): void;
  /** read-only access to the declared resources (the example domain) */
  resources: { list(collection: string): StoredResource[] };
}

/**
 * A task type, declared in one file: a name, a JSON Schema for its input, and
 * a handler that returns the result or throws (a TaskProblem to choose the
 * Problem; anything else becomes a generic task-failed Problem).
 */
export interface TaskType<I = unknown, R = unknown> {
  name: string;
  description: string;
  inputSchema: object;
  /**
   * What JSON Schema cannot say about an input that matched `inputSchema` (one field bounded by another): each
   * error names its field by a JSON pointer into the input. A 400 at submission, never a task that cannot do
   * what it was asked.
   */
  checkInput?(input: I): InputError[];
  /** a run taking longer is aborted and fails with task-timed-out (default TASK_TIMEOUT_MS) */
  timeoutMs?: number;
  run(context: TaskContext<I>): Promise<R>;
}

/** A field of a task's input that its type refuses: `pointer` is RFC 6901, relative to the input. */
export interface InputError {
  pointer: string;
  detail: string;
}

/** Thrown by a handler to end its task in task.failed with this Problem. */
export class TaskProblem extends Error {
  constructor(readonly problem: Omit<ProblemDetail, 'type' | 'title' | 'status'> & Partial<ProblemDetail>) {
    super(problem.detail);
    this.name = 'TaskProblem';
  }
}

export function defineTaskType<I, R>(type: TaskType<I, R>): TaskType<I, R> {
  return type;
}
