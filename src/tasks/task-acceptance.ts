import { writeThenRead } from '../kafka/read-your-writes';
import type {
  KeyedCreation,
  OutgoingRecord,
  Publisher,
  RecordPosition,
  StateView,
  WrittenRecord,
} from '../kafka/types';
import type { TraceContext } from '../tracing/trace-context';
import { taskEventRecord, type TaskTopics } from './task-events';
import type { TaskRecord, TaskSnapshot } from './task-snapshot';
import { isoNow } from '../lib/iso-now';

export interface NewTask {
  taskId: string;
  tenant: string;
  type: string;
  input: unknown;
  subscription?: string;
  /** the span it is accepted in: task.accepted names it as its parent */
  trace?: TraceContext;
}

/**
 * Accepts a task in one transaction, in two stages: task.accepted first, then
 * the snapshot holding that event's position (known before the commit) with
 * any records that must land with it. Returns once the view has the snapshot (it applies its own write).
 */
export async function acceptTask(
  deps: { publisher: Publisher; view: StateView<TaskRecord>; topics: TaskTopics; timeoutMs: number },
  task: NewTask,
  alongside: OutgoingRecord[] = [],
  idempotency?: KeyedCreation,
  /** given every record written: the alongside records' own views apply theirs (read-your-writes) */
  written?: (records: WrittenRecord[]) => void,
): Promise<TaskSnapshot> {
  const now = isoNow();
  const draft: TaskSnapshot = {
    taskId: task.taskId,
    tenant: task.tenant,
    type: task.type,
    status: 'accepted',
    topic: deps.topics.taskEvents,
    partition: -1,
    offset: -1,
    attempt: 0,
    createdAt: now,
    updatedAt: now,
    ...(task.subscription ? { subscription: task.subscription } : {}),
  };
  let snapshot = draft;
  // Only the event: the snapshot that goes with it is written in the second stage, once its position is known.
  const event = taskEventRecord(deps.topics, 'task.accepted', draft, { input: task.input }, task.trace);
  const withSnapshot = ([first]: RecordPosition[]) => {
    snapshot = { ...draft, partition: first.partition, offset: Number(first.offset) };
    return [{ topic: deps.topics.tasks, key: task.taskId, value: JSON.stringify(snapshot) }, ...alongside];
  };
  const records = await writeThenRead(deps.view, deps.timeoutMs, (timeoutMs) =>
    deps.publisher.publishStaged([event], withSnapshot, {
      timeoutMs,
      thenTo: [{ topic: deps.topics.tasks, key: task.taskId }, ...alongside],
      idempotency,
    }),
  );
  written?.(records);
  return snapshot;
}
