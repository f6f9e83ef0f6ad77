import { problem } from '../../src/problems/problem-detail';
import type { ConsumerHandle, FencingPublisher, GroupConsumerOptions, IncomingRecord, StateView } from '../../src/kafka/types';
import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import { linkedAbort } from '../../src/lib/linked-abort';
import type { Logger } from '../../src/logger';
import type { ServiceMetrics } from '../../src/metrics/metrics';
import { parseTraceparent, withTrace } from '../../src/tracing/trace-context';
import { PROPAGATION_ONLY, type Tracer } from '../../src/tracing/tracer';
import { acceptTask, type NewTask } from '../../src/tasks/task-acceptance';
import type { TaskTopics } from '../../src/tasks/task-events';
import type { TaskRegistry } from '../../src/tasks/task-registry';
import { parseTaskRequest, TASK_ID_PATTERN, type ParsedRequest } from '../../src/tasks/task-request';
import { cancelKey, cancelledTaskId, isFinal, isSnapshot, type TaskRecord, type TaskSnapshot } from '../../src/tasks/task-snapshot';
import type { TaskContext } from '../../src/tasks/task-type';
import { PartitionWriters, type CheckedWriter } from './partition-writers';
import { Cancelled, execute, supersededBy, TaskJournal, TimedOut, type ExecutionDeps, type Outcome } from './task-execution';

export interface TaskRunnerDeps {
  runGroupConsumer(options: GroupConsumerOptions): Promise<ConsumerHandle>;
  /** a publisher under a fixed transactional id; creating it fences earlier writers with that id */
  fencingPublisher(transactionalId: string): FencingPublisher;
  /** `<prefix><partition>` names each input partition's transactional id */
  transactionalIdPrefix: string;
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
  /** first pause before a run interrupted by a Kafka failure is tried again (it doubles, up to 10 s) */
  retryDelayMs?: number;
  metrics?: ServiceMetrics;
  tracer?: Tracer;
}

/** What one record's handling needs: where it came from and who may write for it. */
interface Job {
  taskId: string;
  partition: number;
  handBack: AbortSignal;
  writer: CheckedWriter;
  exec: ExecutionDeps;
}

/**
 * The task runner: a consumer group on the task requests topic. Each request
 * is run to exactly one final event; its offset is committed only after that,
 * so a runner that dies mid-task leaves the request to the group, and the
 * task is run again (attempt + 1) by whichever runner gets its partition.
 *
 * Exactly one final event: every write for a partition's tasks goes through
 * that partition's fencing publisher (see PartitionWriters), and a final event
 * is written only under the initialization after which the view was seen to
 * hold no final event for the task. An uncertain write (a timeout, a broker
 * fault) is never simply repeated: the publisher settles it for good, the
 * view is synced, and the final is written only if it is still missing.
 */
export async function startTaskRunner(deps: TaskRunnerDeps): Promise<ConsumerHandle> {
  const logger = deps.logger.child({ component: 'task-runner' });
  const running = new Map<string, AbortController>();
  /** one handling per task at a time: a request produced twice must not run twice at once */
  const perTask = new Map<string, Promise<void>>();
  const writers = new PartitionWriters(deps.fencingPublisher, deps.transactionalIdPrefix, deps.view, deps.kafkaTimeoutMs);
  const firstRetryMs = deps.retryDelayMs ?? 1000;
  const tracer = deps.tracer ?? PROPAGATION_ONLY;

  deps.view.onChange((key, value) => {
    const cancelled = value === undefined ? undefined : cancelledTaskId(key);
    if (cancelled !== undefined) running.get(cancelled)?.abort(new Cancelled());
  });

  const execDeps = (publisher: FencingPublisher): ExecutionDeps => ({
    publisher, view: deps.view, topics: deps.topics, resources: deps.resources, logger, kafkaTimeoutMs: deps.kafkaTimeoutMs,
  });

  /** The snapshot committed with an api request reaches this view shortly; wait for it rather than accept twice. */
  async function snapshotOf(taskId: string, expected: boolean, handBack: AbortSignal): Promise<TaskSnapshot | undefined> {
    const deadline = Date.now() + (expected ? deps.kafkaTimeoutMs : 0);
    for (;;) {
      const seen = deps.view.get(taskId);
      if (isSnapshot(seen) || Date.now() >= deadline || handBack.aborted) return isSnapshot(seen) ? seen : undefined;
      await pause(20, handBack);
    }
  }

  /**
   * Writes the final event behind the run's earlier ones, in their chain, and waits until it is in Kafka and in the
   * view: 'retry' when an earlier write failed (the final was then refused unsent, or landed with them in one
   * transaction whose answer was lost; the next try settles and syncs before deciding).
   */
  async function finish(job: Job, journal: TaskJournal, outcome: Outcome): Promise<'done' | 'retry'> {
    const status = outcome.kind === 'task.succeeded' ? 'succeeded' : outcome.kind === 'task.failed' ? 'failed' : 'cancelled';
    const change: Partial<TaskSnapshot> = { status, finishedAt: new Date().toISOString(), ...outcome.data };
    let writer = job.writer;
    let final = journal.write(outcome.kind, change, outcome.data, { generation: writer.generation, chain: journal.chain });
    // Awaited below in either case; it may fail while the earlier writes are awaited, which is not unhandled.
    final.catch(() => undefined);
    if (!(await journal.flush())) {
      await final.catch(() => undefined);
      writers.markUnsure(job.partition);
      return 'retry';
    }
    while (!job.handBack.aborted) {
      try {
        await final;
        const ran = Date.now() - Date.parse(journal.current.startedAt ?? journal.current.createdAt);
        deps.metrics?.taskFinished(status, journal.current.type, Math.max(0, ran) / 1000);
        return 'done';
      } catch (err) {
        writers.markUnsure(job.partition);
        logger.warn({ taskId: job.taskId, err }, 'the final event may not have landed; settling it before deciding');
      }
      // The failed write may have committed under this very generation (its answer or the view's wait was what
      // failed), so the generation proves nothing now: write again only once the view, synced after the
      // publisher settled, shows no final event.
      const checked = await settledWithoutFinal(job);
      if (!checked) return 'done';
      writer = checked;
      final = journal.write(outcome.kind, change, outcome.data, { generation: writer.generation });
    }
    return 'done';
  }

  /**
   * Settles the partition's writes and syncs the view, again until it can say: the writer to write the final with,
   * or undefined when the final is there or the task was handed back.
   */
  async function settledWithoutFinal(job: Job): Promise<CheckedWriter | undefined> {
    for (let failures = 1; !job.handBack.aborted; failures += 1) {
      try {
        await pause(retryDelayMs(failures, firstRetryMs / 4, 10000), job.handBack);
        const writer = await writers.resolved(job.partition);
        const seen = deps.view.get(job.taskId);
        return isSnapshot(seen) && isFinal(seen.status) ? undefined : writer;
      } catch (err) {
        if (job.handBack.aborted) return undefined;
        logger.warn({ taskId: job.taskId, err }, 'Kafka is not answering; the final event is decided once it does');
      }
    }
    return undefined;
  }

  async function runOnce(job: Job, snapshot: TaskSnapshot, input: unknown): Promise<'done' | 'retry' | 'handed-back'> {
    const type = deps.registry.get(snapshot.type);
    if (!type) throw new Error(`unknown type ${snapshot.type}`);
    const attempt = snapshot.attempt + 1;
    const journal = new TaskJournal(snapshot, job.exec, job.writer.generation);
    const started = { status: 'running' as const, attempt, startedAt: new Date().toISOString() };
    // Not awaited: it heads the run's chain of writes, so no later event of the run lands without it.
    journal.enqueue('task.started', started, { attempt, runner: deps.runnerId });
    const cancel = new AbortController();
    running.set(snapshot.taskId, cancel);
    if (deps.view.get(cancelKey(snapshot.taskId))) cancel.abort(new Cancelled());
    const timeoutMs = type.timeoutMs ?? deps.taskTimeoutMs;
    const timedOut = new AbortController();
    // A timer cleared when the run ends: AbortSignal.timeout's cannot be, and would hold the run's signals and
    // everything listening to them until TASK_TIMEOUT_MS (an hour by default) after every task.
    const timer = setTimeout(() => timedOut.abort(new TimedOut(timeoutMs)), timeoutMs);
    const { signal, unlink } = linkedAbort([job.handBack, cancel.signal, timedOut.signal]);
    try {
      const outcome = await execute(type, journal, input, signal, job.exec);
      if (outcome === 'handed-back') return 'handed-back';
      if (supersededBy(deps.view, snapshot.taskId, attempt)) {
        await journal.flush();
        return 'done';
      }
      const finished = await finish(job, journal, outcome);
      return job.handBack.aborted ? 'handed-back' : finished;
    } finally {
      unlink();
      clearTimeout(timer);
      running.delete(snapshot.taskId);
    }
  }

  /** A request produced to Kafka by a client of its own: the runner accepts it, as the api would. */
  async function accept(job: Job, task: Omit<NewTask, 'taskId'>): Promise<TaskSnapshot> {
    const snapshot = await acceptTask({ ...job.exec, timeoutMs: deps.kafkaTimeoutMs }, { taskId: job.taskId, ...task });
    deps.metrics?.taskAccepted();
    return snapshot;
  }

  /** A request no run can use: it ends in task.failed with the reasons, never in silence. */
  async function reject(job: Job, parsed: Extract<ParsedRequest, { ok: false }>, keyed: boolean): Promise<'done' | 'retry'> {
    const seen = deps.view.get(job.taskId);
    const rejected = { tenant: parsed.tenant, type: parsed.type, input: undefined };
    const snapshot = isSnapshot(seen) ? seen : await accept(job, rejected);
    const detail = keyed ? 'The task request is invalid; see errors.' : 'The task request has no valid key (task id); see errors.';
    const failure = problem('task-request-invalid', detail, { errors: parsed.errors });
    return finish(job, new TaskJournal(snapshot, job.exec), { kind: 'task.failed', data: { problem: failure } });
  }

  /** One try at a request: 'retry' when a Kafka failure interrupted the run and it must run again. */
  async function handleOnce(record: IncomingRecord, taskId: string, handBack: AbortSignal): Promise<'done' | 'retry' | 'handed-back'> {
    const writer = await writers.checked(record.partition);
    const job: Job = { taskId, partition: record.partition, handBack, writer, exec: execDeps(writer.publisher) };
    const seen = deps.view.get(taskId);
    if (isSnapshot(seen) && isFinal(seen.status)) return 'done';
    const parsed = parseTaskRequest(record.value, deps.registry);
    if (!parsed.ok) return reject(job, parsed, record.key === taskId);
    const { request } = parsed;
    const known = isSnapshot(seen) ? seen : await snapshotOf(taskId, request.accepted, handBack);
    if (known && isFinal(known.status)) return 'done';
    const snapshot = known ?? (await accept(job, { tenant: request.tenant, type: request.type, input: request.input }));
    return runOnce(job, snapshot, request.input);
  }

  async function handle(record: IncomingRecord, handBack: AbortSignal): Promise<void> {
    const taskId = record.key && TASK_ID_PATTERN.test(record.key) ? record.key : `request-${record.partition}-${record.offset}`;
    for (let failures = 1; !handBack.aborted; failures += 1) {
      try {
        if ((await handleOnce(record, taskId, handBack)) !== 'retry') return;
      } catch (err) {
        writers.markUnsure(record.partition);
        if (handBack.aborted) return;
        logger.warn({ taskId, err }, 'task run interrupted by a Kafka failure; running it again');
      }
      await pause(retryDelayMs(failures, firstRetryMs, 10000), handBack);
    }
  }

  function handleSerially(record: IncomingRecord, handBack: AbortSignal): Promise<void> {
    const key = record.key ?? '';
    const previous = perTask.get(key) ?? Promise.resolve();
    // The run is a span of the trace its request carries: its events, and the callbacks they lead to, belong to it.
    const mine = previous.then(() => {
      const span = tracer.start('run task', 'consumer', parseTraceparent(record.headers.traceparent), {
        'messaging.destination.name': record.topic,
      });
      return withTrace(span.context, () => handle(record, handBack)).finally(() => span.end());
    });
    const tail = mine.catch(() => undefined);
    perTask.set(key, tail);
    void tail.then(() => { if (perTask.get(key) === tail) perTask.delete(key); });
    return mine;
  }

  const consumer = await deps.runGroupConsumer({
    groupId: deps.groupId,
    topics: [deps.topics.taskRequests],
    maxInFlight: deps.concurrency,
    handle: handleSerially,
    onRevoked: (topic, partition) => {
      logger.info({ topic, partition }, 'partition revoked; its running tasks are handed back');
      void writers.release(partition);
    },
  });
  return {
    async stop() {
      await consumer.stop();
      await writers.closeAll();
    },
  };
}
