import { cloudEventRecord } from '../events/cloud-event';
import type { OutgoingRecord } from '../kafka/types';
import type { TraceContext } from '../tracing/trace-context';
import type { TaskSnapshot } from './task-snapshot';

export const TASK_EVENT_KINDS = [
  'task.accepted',
  'task.started',
  'task.progress',
  'task.output',
  'task.succeeded',
  'task.failed',
  'task.cancelled',
] as const;
export type TaskEventKind = (typeof TASK_EVENT_KINDS)[number];

/** The JSON value of a task event on the events topic. */
export interface TaskEvent {
  event: TaskEventKind;
  taskId: string;
  type: string;
  attempt: number;
  time: string;
  data: unknown;
}

export interface TaskTopics {
  taskEvents: string;
  tasks: string;
}

/** A task event record: CloudEvents headers, the TaskEvent as its JSON value. */
export function taskEventRecord(
  topics: TaskTopics,
  kind: TaskEventKind,
  snapshot: TaskSnapshot,
  data: unknown,
  trace?: TraceContext,
): OutgoingRecord {
  const time = snapshot.updatedAt;
  const value: TaskEvent = {
    event: kind,
    taskId: snapshot.taskId,
    type: snapshot.type,
    attempt: snapshot.attempt,
    time,
    data,
  };
  return cloudEventRecord({
    topic: topics.taskEvents,
    key: snapshot.taskId,
    type: kind,
    subject: snapshot.taskId,
    data: value,
    time,
    // The bridge matches a task's events to its tenant's subscriptions without keeping a view of every task.
    extensions: { tenant: snapshot.tenant },
    trace,
  });
}

/**
 * An event and the snapshot it leads to, published together in one
 * transaction so the snapshot never disagrees with the event log.
 */
export function taskEventRecords(
  topics: TaskTopics,
  kind: TaskEventKind,
  snapshot: TaskSnapshot,
  data: unknown,
  trace?: TraceContext,
): OutgoingRecord[] {
  return [
    taskEventRecord(topics, kind, snapshot, data, trace),
    { topic: topics.tasks, key: snapshot.taskId, value: JSON.stringify(snapshot) },
  ];
}
