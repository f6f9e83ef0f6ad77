import { type TaskRunnerDeps } from '../../consumers/task-runner/task-runner';
import { startTaskRunner } from '../../consumers/task-runner/task-runner-consumer';
import type {
  FencingPublisher,
  GroupConsumerOptions,
  IncomingRecord,
  OutgoingRecord,
  WrittenRecord,
} from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import { exampleTaskTypes } from '../../src/examples';
import { TaskRegistry } from '../../src/tasks/task-registry';
import type { TaskRecord } from '../../src/tasks/task-snapshot';
import type { TaskType } from '../../src/tasks/task-type';
import { FakeCommitHolds, FakeView } from './fakes';

/*
 * A task runner on fakes of the project's own ports: one shared log stands in for the topics, publishers under
 * transactional ids that fence as Kafka's do. The fencing itself is proved on a real broker by the fault tests.
 */
export const topics = { taskRequests: 'requests', taskEvents: 'events', tasks: 'tasks' };

/** One log shared by every publisher (one per transactional id), like the topics are. */
export class FakeLog {
  readonly records: OutgoingRecord[] = [];
  readonly view = new FakeView<TaskRecord>();
  /** the next N publishes commit but reject, as a timeout after the commit went through */
  ambiguous = 0;
  /** the next N publishes reject without committing */
  failing = 0;
  ambiguousSeen = 0;
  /** sees every publish first, to arm a fault for it */
  beforePublish: (records: OutgoingRecord[]) => void = () => undefined;

  publisher(): FencingPublisher {
    return fencingPublisherOn(this);
  }

  finals(taskId: string): string[] {
    return this.records
      .filter((r) => r.topic === topics.taskEvents && r.key === taskId)
      .map((r) => JSON.parse(String(r.value)).event)
      .filter((e: string) => ['task.succeeded', 'task.failed', 'task.cancelled'].includes(e));
  }
}

/**
 * Like the real one, settling re-initializes the transactional id (a new
 * generation) only after a failed transaction; a caller whose own deadline or
 * read-back failed leaves the generation as it was.
 */
function fencingPublisherOn(log: FakeLog): FencingPublisher {
  let generation = 0;
  let failedSinceSettled = false;
  const commit = (records: OutgoingRecord[]): WrittenRecord[] => {
    log.records.push(...records);
    for (const r of records) if (r.topic === topics.tasks) log.view.set(r.key, JSON.parse(String(r.value)));
    return records.map((r, i) => ({
      topic: r.topic,
      partition: 0,
      offset: String(log.records.length - records.length + i),
      key: r.key,
      value: r.value,
    }));
  };
  const publish = async (records: OutgoingRecord[], options?: { generation?: number }) => {
    log.beforePublish(records);
    if (options?.generation !== undefined && options.generation !== generation) throw new Error('generation moved on');
    if (log.failing > 0) {
      log.failing -= 1;
      failedSinceSettled = true;
      throw new Error('no acknowledgement (fake)');
    }
    const positions = commit(records);
    if (log.ambiguous > 0) {
      log.ambiguous -= 1;
      log.ambiguousSeen += 1;
      failedSinceSettled = true;
      throw new Error('no acknowledgement in time (fake), but it committed');
    }
    return positions;
  };
  return {
    publish,
    async publishStaged(first, then, options) {
      const a = await publish(first, options);
      return [...a, ...(await publish(then(a), options))];
    },
    async settled() {
      if (failedSinceSettled || generation === 0) generation += 1;
      failedSinceSettled = false;
      return generation;
    },
    get generation() {
      return generation === 0 ? undefined : generation;
    },
    async close() {},
  };
}

export async function runner(log: FakeLog, types: TaskType[] = exampleTaskTypes, more: Partial<TaskRunnerDeps> = {}) {
  let handle: GroupConsumerOptions['handle'] | undefined;
  await startTaskRunner({
    runGroupConsumer: async (o) => {
      handle = o.handle;
      return { stop: async () => undefined };
    },
    fencingPublisher: () => log.publisher(),
    transactionalIdPrefix: 'runner-p',
    view: log.view,
    topics,
    registry: new TaskRegistry(types),
    resources: { list: () => [] },
    logger: createLogger('silent'),
    groupId: 'g',
    runnerId: 'r1',
    concurrency: 4,
    taskTimeoutMs: 10000,
    kafkaTimeoutMs: 1000,
    retryDelayMs: 4,
    ...more,
  });
  const handling = handle as GroupConsumerOptions['handle'];
  return (record: IncomingRecord, signal: AbortSignal) => handling(record, signal, new FakeCommitHolds().holdCommit);
}

export const request = (taskId: string, offset: number, input: unknown = { steps: 2, stepMs: 0 }): IncomingRecord => ({
  topic: topics.taskRequests,
  partition: 0,
  offset: String(offset),
  key: taskId,
  headers: {},
  timestamp: String(Date.now()),
  value: JSON.stringify({ type: 'countdown', input, tenant: 't' }),
});

/** A task a runner that died had started `agoMs` ago, as the view shows it to the runner that runs it again. */
export function startedBefore(log: FakeLog, taskId: string, agoMs: number): void {
  const at = (ms: number) => new Date(Date.now() - ms).toISOString();
  log.view.set(taskId, {
    taskId,
    tenant: 't',
    type: 'countdown',
    status: 'running',
    topic: topics.taskEvents,
    partition: 0,
    offset: 0,
    attempt: 1,
    createdAt: at(agoMs + 10),
    startedAt: at(agoMs),
    updatedAt: at(agoMs),
  });
}
