import type { ProblemDetail } from '../http/problem';

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

export const cancelKey = (taskId: string) => `cancel/${taskId}`;

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
