import type { ViewSpec } from '../kafka/types';
import type { ProblemDetail } from '../problems/problem-detail';

export const TASK_STATUSES = ['accepted', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const FINAL_STATUSES: readonly TaskStatus[] = ['succeeded', 'failed', 'cancelled'];

export interface TaskProgress {
  current: number;
  total: number;
  message?: string;
}

/** The task's state in the compacted tasks topic, key = task id; GET /tasks/{id} reads it. */
export interface TaskSnapshot {
  taskId: string;
  tenant: string;
  type: string;
  status: TaskStatus;
  /** where the task's events start: a Kafka client can begin reading exactly there */
  topic: string;
  partition: number;
  offset: number;
  attempt: number;
  progress?: TaskProgress;
  result?: unknown;
  problem?: ProblemDetail;
  /** the subscription a callbackUrl in the submission created */
  subscription?: string;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  updatedAt: string;
}

/** A cancellation request, kept in the tasks topic under its own key so no snapshot write can erase it. */
export interface CancelRequest {
  cancel: true;
  taskId: string;
  requestedAt: string;
  /** the createdAt of the task it was asked of: a task made since under the same id is another one */
  taskCreatedAt?: string;
}

export type TaskRecord = TaskSnapshot | CancelRequest;

const CANCEL_PREFIX = 'cancel/';

/** A cancel request shares the tasks topic with the snapshots, under its own key: the one place that spells it. */
export const cancelKey = (taskId: string) => `${CANCEL_PREFIX}${taskId}`;

/** how much earlier than its task's creation a cancel may say it was asked (clocks of two processes differ) */
const CANCEL_CLOCK_SKEW_MS = 5000;

/**
 * The cancel request under the task's cancel key, if it was asked of this task. One asked of an earlier task under the
 * same id does not count: a cancel written after that task's DELETE, by an instance that had not read the DELETE yet,
 * outlives the tombstones and would cancel a task a Kafka client submits under the id later. A cancel names the task
 * it was asked of by its creation time; one written before it did is told by its own time, with a clocks' allowance.
 */
export function cancelOf(record: TaskRecord | undefined, task: TaskSnapshot | undefined): CancelRequest | undefined {
  if (record === undefined || isSnapshot(record)) return undefined;
  if (record.taskCreatedAt !== undefined && task !== undefined) {
    return record.taskCreatedAt === task.createdAt ? record : undefined;
  }
  const createdAt = Date.parse(task?.createdAt ?? '');
  const requestedAt = Date.parse(record.requestedAt);
  const earlier = Number.isFinite(createdAt) && Number.isFinite(requestedAt);
  return earlier && requestedAt < createdAt - CANCEL_CLOCK_SKEW_MS ? undefined : record;
}

/** The task a tasks-topic key asks to cancel; undefined for a snapshot's key. */
export function cancelledTaskId(key: string): string | undefined {
  return key.startsWith(CANCEL_PREFIX) ? key.slice(CANCEL_PREFIX.length) : undefined;
}

export function isFinal(status: TaskStatus): boolean {
  return FINAL_STATUSES.includes(status);
}

export function isSnapshot(r: TaskRecord | undefined): r is TaskSnapshot {
  return r !== undefined && !('cancel' in r);
}

export function decodeTaskRecord(value: string): TaskRecord {
  const parsed = JSON.parse(value) as TaskRecord;
  if (typeof parsed?.taskId !== 'string') throw new Error('not a task record');
  return parsed;
}

export const TASKS_VIEW: ViewSpec<TaskRecord> = { topic: 'tasks', decode: decodeTaskRecord };
