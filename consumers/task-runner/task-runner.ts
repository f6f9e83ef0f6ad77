import type { ConsumerHandle, GroupConsumerOptions, IncomingRecord, Publisher, StateView } from '../../src/kafka/types';
import type { Logger } from '../../src/logger';
import { problem } from '../../src/http/problem';
import { pause } from '../../src/tasks/abortable-sleep';
import { acceptTask } from '../../src/tasks/task-acceptance';
import type { TaskTopics } from '../../src/tasks/task-events';
import type { TaskRegistry } from '../../src/tasks/task-registry';
import { parseTaskRequest, TASK_ID_PATTERN } from '../../src/tasks/task-request';
import { cancelKey, isFinal, isSnapshot, type TaskRecord, type TaskSnapshot } from '../../src/tasks/task-snapshot';
import type { TaskContext } from '../../src/tasks/task-type';
import { Cancelled, execute, supersededBy, TaskJournal, TimedOut, type ExecutionDeps } from './task-execution';

export interface TaskRunnerDeps {
  runGroupConsumer(options: GroupConsumerOptions): Promise<ConsumerHandle>;
  publisher: Publisher;
  view: StateView<TaskRecord>;
  topics: TaskTopics & { taskRequests: string };
  registry: TaskRegistry;
  resources: TaskContext<unknown>['resources'];
  logger: Logger;
  groupId: string;
  /** names this runner in task.started events, for operators */
  runnerId: string;
  concurrency: number;
  taskTimeoutMs: number;
  kafkaTimeoutMs: number;
  /** pause before a run interrupted by a Kafka failure is tried again */
  retryDelayMs?: number;
}

/**
 * The task runner: a consumer group on the task requests topic. Each request
 * is run once to a final event; its offset is committed only after that, so a
 * runner that dies mid-task leaves the request to the group, and the task is
 * run again (attempt + 1) by whichever runner gets its partition.
 */
export async function startTaskRunner(deps: TaskRunnerDeps): Promise<ConsumerHandle> {
  const logger = deps.logger.child({ component: 'task-runner' });
  const running = new Map<string, AbortController>();
  const exec: ExecutionDeps = { publisher: deps.publisher, view: deps.view, topics: deps.topics, resources: deps.resources, logger, kafkaTimeoutMs: deps.kafkaTimeoutMs };
  const retryDelayMs = deps.retryDelayMs ?? 1000;

  deps.view.onChange((key, value) => {
    if (value !== undefined && key.startsWith('cancel/')) running.get(key.slice('cancel/'.length))?.abort(new Cancelled());
  });

  /** A task that came straight from Kafka, not through the api, gets its first event and snapshot here. */
  const accept = (taskId: string, tenant: string, type: string, input: unknown) =>
    acceptTask({ ...deps, timeoutMs: deps.kafkaTimeoutMs }, { taskId, tenant, type, input });

  /** The snapshot committed with an api request reaches this view shortly; wait for it rather than accept twice. */
  async function snapshotOf(taskId: string, expected: boolean, handBack: AbortSignal): Promise<TaskSnapshot | undefined> {
    const deadline = Date.now() + (expected ? deps.kafkaTimeoutMs : 0);
    for (;;) {
      const seen = deps.view.get(taskId);
      if (isSnapshot(seen) || Date.now() >= deadline || handBack.aborted) return isSnapshot(seen) ? seen : undefined;
      await pause(20, handBack);
    }
  }

  async function finish(journal: TaskJournal, outcome: Exclude<Awaited<ReturnType<typeof execute>>, 'handed-back'>, handBack: AbortSignal): Promise<void> {
    const status = outcome.kind === 'task.succeeded' ? 'succeeded' : outcome.kind === 'task.failed' ? 'failed' : 'cancelled';
    const change: Partial<TaskSnapshot> = { status, finishedAt: new Date().toISOString(), ...outcome.data };
    // The final event must land: retry until it does, unless the work is handed back meanwhile.
    while (!handBack.aborted) {
      try {
        await journal.write(outcome.kind, change, outcome.data);
        return;
      } catch (err) {
        logger.warn({ taskId: journal.current.taskId, err: (err as Error).message }, 'could not publish the final event; retrying');
        await pause(retryDelayMs, handBack);
      }
    }
  }

  async function runOnce(snapshot: TaskSnapshot, input: unknown, handBack: AbortSignal): Promise<'done' | 'retry' | 'handed-back'> {
    const type = deps.registry.get(snapshot.type);
    if (!type) throw new Error(`unknown type ${snapshot.type}`);
    const attempt = snapshot.attempt + 1;
    const journal = new TaskJournal(snapshot, exec);
    await journal.write('task.started', { status: 'running', attempt, startedAt: new Date().toISOString() }, { attempt, runner: deps.runnerId });
    const cancel = new AbortController();
    running.set(snapshot.taskId, cancel);
    if (deps.view.get(cancelKey(snapshot.taskId))) cancel.abort(new Cancelled());
    const timeoutMs = type.timeoutMs ?? deps.taskTimeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const timedOut = new AbortController();
    timeout.addEventListener('abort', () => timedOut.abort(new TimedOut(timeoutMs)), { once: true });
    const signal = AbortSignal.any([handBack, cancel.signal, timedOut.signal]);
    try {
      const outcome = await execute(type, journal, input, signal, exec);
      if (outcome === 'handed-back') return 'handed-back';
      if (!(await journal.flush())) return 'retry';
      if (supersededBy(deps.view, snapshot.taskId, attempt)) return 'done';
      await finish(journal, outcome, handBack);
      return handBack.aborted ? 'handed-back' : 'done';
    } finally {
      running.delete(snapshot.taskId);
    }
  }

  async function handle(record: IncomingRecord, handBack: AbortSignal): Promise<void> {
    const taskId = record.key && TASK_ID_PATTERN.test(record.key) ? record.key : `request-${record.partition}-${record.offset}`;
    const parsed = parseTaskRequest(record.value, deps.registry);
    for (;;) {
      try {
        const seen = deps.view.get(taskId);
        if (isSnapshot(seen) && isFinal(seen.status)) return;
        if (!parsed.ok) {
          const snapshot = isSnapshot(seen) ? seen : await accept(taskId, parsed.tenant, parsed.type, undefined);
          const detail = record.key === taskId ? 'The task request is invalid; see errors.' : 'The task request has no valid key (task id); see errors.';
          const failure = problem('task-request-invalid', detail, { errors: parsed.errors });
          await finish(new TaskJournal(snapshot, exec), { kind: 'task.failed', data: { problem: failure } }, handBack);
          return;
        }
        const { request } = parsed;
        const known = isSnapshot(seen) ? seen : await snapshotOf(taskId, request.accepted, handBack);
        if (known && isFinal(known.status)) return;
        const snapshot = known ?? await accept(taskId, request.tenant, request.type, request.input);
        const result = await runOnce(snapshot, request.input, handBack);
        if (result !== 'retry') return;
      } catch (err) {
        if (handBack.aborted) return;
        logger.warn({ taskId, err: (err as Error).message }, 'task run interrupted by a Kafka failure; running it again');
      }
      await pause(retryDelayMs, handBack);
      if (handBack.aborted) return;
    }
  }

  return deps.runGroupConsumer({
    groupId: deps.groupId,
    topics: [deps.topics.taskRequests],
    maxInFlight: deps.concurrency,
    handle,
    onRevoked: (topic, partition) => logger.info({ topic, partition }, 'partition revoked; its running tasks are handed back'),
  });
}
