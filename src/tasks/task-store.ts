import { v4 as uuidv4 } from 'uuid';
import type { OutgoingRecord, Publisher, RecordPosition, StateView } from '../kafka/types';
import { taskEventRecords, type TaskTopics } from './task-events';
import type { TaskRequest } from './task-request';
import { cancelKey, isSnapshot, type CancelRequest, type TaskRecord, type TaskSnapshot, type TaskStatus } from './task-snapshot';

export interface TaskStoreDeps {
  view: StateView<TaskRecord>;
  publisher: Publisher;
  topics: TaskTopics & { taskRequests: string };
  timeoutMs: number;
}

export interface Submission {
  tenant: string;
  type: string;
  input: unknown;
  /** records to write in the same transaction (the subscription a callbackUrl creates) */
  alongside?: (taskId: string) => OutgoingRecord[];
  subscription?: string;
}

/** The api's side of tasks: submit, read, list, ask to cancel. It never runs task code. */
export class TaskStore {
  constructor(private readonly deps: TaskStoreDeps) {}

  get(taskId: string): TaskSnapshot | undefined {
    const r = this.deps.view.get(taskId);
    return isSnapshot(r) ? r : undefined;
  }

  cancelRequested(taskId: string): boolean {
    return this.deps.view.get(cancelKey(taskId)) !== undefined;
  }

  list(tenant: string, filter: { type?: string; status?: TaskStatus }): TaskSnapshot[] {
    const out: TaskSnapshot[] = [];
    for (const r of this.deps.view.values()) {
      if (!isSnapshot(r) || r.tenant !== tenant) continue;
      if ((filter.type && r.type !== filter.type) || (filter.status && r.status !== filter.status)) continue;
      out.push(r);
    }
    return out.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.taskId < b.taskId ? -1 : 1));
  }

  /**
   * One transaction: task.accepted first, whose offset then goes into the
   * snapshot, written with the task request. The runner can never see a
   * request without its snapshot, and the caller gets the first event's
   * position. Returns once this process's view has the snapshot.
   */
  async submit(s: Submission): Promise<TaskSnapshot> {
    const { topics } = this.deps;
    const taskId = uuidv4();
    const now = new Date().toISOString();
    const draft: TaskSnapshot = {
      taskId, tenant: s.tenant, type: s.type, status: 'accepted', topic: topics.taskEvents, partition: -1, offset: -1,
      attempt: 0, createdAt: now, updatedAt: now, ...(s.subscription ? { subscription: s.subscription } : {}),
    };
    let snapshot = draft;
    const [acceptedEvent] = taskEventRecords(topics, 'task.accepted', draft, { input: s.input });
    const request: TaskRequest = { type: s.type, input: s.input, tenant: s.tenant, submittedAt: now, accepted: true };
    const positions = await this.deps.publisher.publishStaged([acceptedEvent], ([first]: RecordPosition[]) => {
      snapshot = { ...draft, partition: first.partition, offset: Number(first.offset) };
      return [
        { topic: topics.tasks, key: taskId, value: JSON.stringify(snapshot) },
        { topic: topics.taskRequests, key: taskId, value: JSON.stringify(request) },
        ...(s.alongside?.(taskId) ?? []),
      ];
    });
    await this.deps.view.waitFor(positions, this.deps.timeoutMs);
    return this.get(taskId) ?? snapshot;
  }

  /** Records the request; the runner that owns the task aborts it and publishes task.cancelled. */
  async requestCancel(taskId: string): Promise<void> {
    const request: CancelRequest = { cancel: true, taskId, requestedAt: new Date().toISOString() };
    const positions = await this.deps.publisher.publish([{ topic: this.deps.topics.tasks, key: cancelKey(taskId), value: JSON.stringify(request) }]);
    await this.deps.view.waitFor(positions, this.deps.timeoutMs);
  }
}
