import { v4 as uuidv4 } from 'uuid';
import type { OutgoingRecord, Publisher, StateView } from '../kafka/types';
import { acceptTask } from './task-acceptance';
import type { TaskTopics } from './task-events';
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
   * The task request is written in the acceptance transaction, so the runner
   * can never see a request without its snapshot; the caller gets the
   * position of the task's first event.
   */
  async submit(s: Submission): Promise<TaskSnapshot> {
    const taskId = uuidv4();
    const request: TaskRequest = { type: s.type, input: s.input, tenant: s.tenant, submittedAt: new Date().toISOString(), accepted: true };
    const snapshot = await acceptTask(
      this.deps,
      { taskId, tenant: s.tenant, type: s.type, input: s.input, subscription: s.subscription },
      [{ topic: this.deps.topics.taskRequests, key: taskId, value: JSON.stringify(request) }, ...(s.alongside?.(taskId) ?? [])],
    );
    return this.get(taskId) ?? snapshot;
  }

  /** Records the request; the runner that owns the task aborts it and publishes task.cancelled. */
  async requestCancel(taskId: string): Promise<void> {
    const request: CancelRequest = { cancel: true, taskId, requestedAt: new Date().toISOString() };
    const positions = await this.deps.publisher.publish([{ topic: this.deps.topics.tasks, key: cancelKey(taskId), value: JSON.stringify(request) }]);
    await this.deps.view.waitFor(positions, this.deps.timeoutMs);
  }
}
