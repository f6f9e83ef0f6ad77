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
}

export type TaskRecord = TaskSnapshot | CancelRequest;

const CANCEL_PREFIX = 'cancel/';

/** A cancel request shares the tasks topic with the snapshots, under its own key: the one place that spells it. */
export const cancelKey = (taskId: string) => `${CANCEL_PREFIX}${taskId}`;

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
