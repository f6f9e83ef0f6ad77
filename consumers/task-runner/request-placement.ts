import type { IncomingRecord, StateView } from '../../src/kafka/types';
import { taskIdOfRequest } from '../../src/tasks/task-request';
import type { TaskRecord } from '../../src/tasks/task-snapshot';
import { MOVED_FROM } from './request-moves';

/** Which task a request is for, and the partition it must be moved to before it runs (none: it runs where it is). */
export interface Placement {
  taskId: string;
  keyed: boolean;
  home?: number;
}

/**
 * The request's task id (taskIdOfRequest). A key in UUID form with upper-case letters names a task in lower case; one
 * that already names a task under the key as written (accepted before keys were lowered, still under way on an
 * upgrade) keeps that name, so its run ends, and is not started again under the other.
 *
 * It is moved when it has a valid key that hashes to another partition (`partitionOfTask`), unless it was moved
 * already: partition counts that two runners see differently, while partitions are being added, must not send it
 * back and forth.
 */
export function placeRequest(
  record: IncomingRecord,
  view: Pick<StateView<TaskRecord>, 'get'>,
  partitionOfTask?: (taskId: string) => number,
): Placement {
  const named = taskIdOfRequest(record.key, record.partition, record.offset);
  const asWritten = record.key;
  const kept = named.keyed && asWritten !== null && asWritten !== named.taskId && view.get(asWritten) !== undefined;
  const { taskId, keyed } = kept ? { taskId: asWritten, keyed: true } : named;
  if (!keyed || record.headers[MOVED_FROM] !== undefined) return { taskId, keyed };
  const home = partitionOfTask?.(taskId);
  return { taskId, keyed, home: home === record.partition ? undefined : home };
}
