import type {
  ConsumerHandle,
  FencingPublisher,
  GroupConsumerOptions,
  IncomingRecord,
  StateView,
} from '../../src/kafka/types';
import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import { KeyedSerial } from '../../src/lib/keyed-serial';
import { linkedAbort } from '../../src/lib/linked-abort';
import type { Logger } from '../../src/logger';
import type { ServiceMetrics } from '../../src/metrics/metrics';
import { parseTraceparent, type TraceContext } from '../../src/tracing/trace-context';
import { PROPAGATION_ONLY, type Tracer } from '../../src/tracing/tracer';
import type { TaskTopics } from '../../src/tasks/task-events';
import type { TaskRegistry } from '../../src/tasks/task-registry';
import { parseTaskRequest } from '../../src/tasks/task-request';
import { moveRequest, TOO_LARGE, tooLargeRequest } from './request-moves';
import { placeRequest, type Placement } from './request-placement';
import {
  cancelKey,
  cancelOf,
  cancelledTaskId,
  isFinal,
  isSnapshot,
  type TaskRecord,
  type TaskSnapshot,
} from '../../src/tasks/task-snapshot';
import type { TaskContext } from '../../src/tasks/task-type';
import { FinalEventWriter } from './final-event';
import { RequestIntake, type Job } from './request-intake';
import { decideFinal, type DecisionDeps, type RunClock } from './final-decision';
import { PartitionWriters } from './partition-writers';
import {
  Cancelled,
  execute,
  supersededBy,
  TaskJournal,
  TimedOut,
  timedOutOutcome,
  type ExecutionDeps,
  type Outcome,
} from './task-execution';
import { isoNow } from '../../src/lib/iso-now';
import { LoopStalls, type Stalls } from '../../src/lib/loop-stalls';

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
  /**
   * The requests partition a task id's key goes to with Kafka's default partitioner (murmur2, as the api and the
   * Java client produce): a client's request found on another partition is moved there first (see handle).
   */
  partitionOfTask?: (taskId: string) => number;
  metrics?: ServiceMetrics;
  tracer?: Tracer;
  /** when this process did not run for a while (a run's end is then decided with its view synced) */
  stalls?: Stalls;
}

type Try = 'done' | 'retry' | 'handed-back';

/**
 * Runs each task request to exactly one final event (FinalEventWriter). Every write for a partition's tasks goes
 * through that partition's fencing publisher (PartitionWriters), so a zombie runner's writes are fenced. A task's
 * requests are handled one at a time: a request produced twice must not run twice at once.
 */
export class TaskRunner {
  readonly logger: Logger;
  private readonly running = new Map<string, AbortController>();
  private readonly perTask = new KeyedSerial();
  readonly writers: PartitionWriters;
  private readonly finals: FinalEventWriter;
  private readonly intake: RequestIntake;
  private readonly firstRetryMs: number;
  private readonly tracer: Tracer;
  private readonly decision: DecisionDeps;
  /** the heartbeat this runner started, when none was given: stopped with it */
  private readonly ownStalls: LoopStalls | undefined;

  constructor(private readonly deps: TaskRunnerDeps) {
    this.logger = deps.logger.child({ component: 'task-runner' });
    this.writers = new PartitionWriters(
      deps.fencingPublisher,
      deps.transactionalIdPrefix,
      deps.view,
      deps.kafkaTimeoutMs,
    );
    this.firstRetryMs = deps.retryDelayMs ?? 1000;
    this.tracer = deps.tracer ?? PROPAGATION_ONLY;
    this.finals = new FinalEventWriter({
      writers: this.writers,
      view: deps.view,
      logger: this.logger,
      firstRetryMs: this.firstRetryMs,
      metrics: deps.metrics,
    });
    this.intake = new RequestIntake({
      view: deps.view,
      finals: this.finals,
      kafkaTimeoutMs: deps.kafkaTimeoutMs,
      metrics: deps.metrics,
    });
    this.ownStalls = deps.stalls ? undefined : new LoopStalls().start();
    this.decision = {
      view: deps.view,
      stalls: deps.stalls ?? (this.ownStalls as LoopStalls),
      logger: this.logger,
      kafkaTimeoutMs: deps.kafkaTimeoutMs,
      firstRetryMs: this.firstRetryMs,
    };
    deps.view.onChange((key, value) => {
      const cancelled = value === undefined ? undefined : cancelledTaskId(key);
      if (cancelled === undefined) return;
      // Not one asked of an earlier task under the id, written late (after its DELETE) while this one runs.
      const task = deps.view.get(cancelled);
      if (cancelOf(value, isSnapshot(task) ? task : undefined)) this.running.get(cancelled)?.abort(new Cancelled());
    });
  }

  /**
   * The group consumer's handler: after the task's earlier runs, a span of the trace its request carries. A request
   * to move to its key's partition is moved at once: it neither runs nor waits behind the task's run here.
   */
  handleSerially(record: IncomingRecord, handBack: AbortSignal): Promise<void> {
    const { taskId, home } = this.placed(record);
    const traced = () => {
      // Its events, and the callbacks they lead to, belong to the request's trace.
      const span = this.tracer.start('run task', 'consumer', parseTraceparent(record.headers.traceparent), {
        'messaging.destination.name': record.topic,
      });
      return this.handle(record, handBack, span.context).finally(() => span.end());
    };
    return home === undefined ? this.perTask.run(taskId, traced) : traced();
  }

  private placed(record: IncomingRecord): Placement {
    return placeRequest(record, this.deps.view, this.deps.partitionOfTask);
  }

  /**
   * Tries a request until it is done or handed back; a Kafka failure means "run it again", never "move on".
   *
   * A client's request on a partition its key does not hash to (kcat and librdkafka partition keys another way) is
   * moved to the one it does, with the same key, value and headers, and not run here: every request for one task id
   * is then handled on one partition, by the one runner its transactional id lets write for it. Run where they
   * landed, two runners would each find no task and run it twice, each to a final event.
   */
  async handle(record: IncomingRecord, handBack: AbortSignal, trace?: TraceContext): Promise<void> {
    const { taskId, keyed, home } = this.placed(record);
    for (let failures = 1; !handBack.aborted; failures += 1) {
      try {
        const tried =
          home !== undefined
            ? await moveRequest(this.writers, this.deps.kafkaTimeoutMs, this.logger, { record, taskId, home })
            : await this.handleOnce(record, taskId, keyed, handBack, trace);
        if (tried !== 'retry') return;
      } catch (err) {
        this.writers.markUnsure(record.partition);
        if (handBack.aborted) return;
        this.logger.warn({ taskId, err }, 'task run interrupted by a Kafka failure; running it again');
      }
      await pause(retryDelayMs(failures, this.firstRetryMs, 10000), handBack);
    }
  }

  /** One try at a request: 'retry' when a Kafka failure interrupted the run and it must run again. */
  async handleOnce(
    record: IncomingRecord,
    taskId: string,
    keyed: boolean,
    handBack: AbortSignal,
    trace?: TraceContext,
  ): Promise<Try> {
    const writer = await this.writers.checked(record.partition);
    const exec = this.execDeps(writer.publisher, trace);
    const job: Job = { taskId, partition: record.partition, handBack, writer, exec };
    const seen = this.deps.view.get(taskId);
    if (isSnapshot(seen) && isFinal(seen.status)) return 'done';
    const parsed = record.headers[TOO_LARGE]
      ? tooLargeRequest(record.value, record.headers[TOO_LARGE])
      : parseTaskRequest(record.value, this.deps.registry);
    // The api's mark, on a request it wrote with the task's snapshot (one that no longer parses too: its type gone).
    const marked = parsed.ok ? parsed.request.accepted : parsed.accepted === true;
    let known = isSnapshot(seen) ? seen : await this.intake.snapshotOf(taskId, marked, handBack);
    if (!known && marked) {
      known = await this.intake.syncedSnapshot(taskId);
      // The group's commit waits for its partition's oldest unfinished task, so a runner that takes the partition
      // over (a fault, a rebalance) reads the later requests again. One of a task forgotten since has no snapshot:
      // taken for new, it ran again (or failed again), and a deleted task was back.
      if (!known) return this.passOver(record, taskId);
    }
    if (known && isFinal(known.status)) return 'done';
    if (!parsed.ok) return this.intake.reject(job, parsed, keyed);
    const { request } = parsed;
    const snapshot =
      known ??
      (await this.intake.acceptOrReject(job, { tenant: request.tenant, type: request.type, input: request.input }));
    if (typeof snapshot === 'string') return snapshot;
    return this.runOnce(job, snapshot, request.input);
  }

  /**
   * A request marked as the api's whose task the synced view does not hold: one forgotten since (DELETE, retention),
   * or a client's copy of an api request (README: leave the mark out). Told, since no event will say it.
   */
  private passOver(record: IncomingRecord, taskId: string): Try {
    const at = { taskId, partition: record.partition, offset: record.offset };
    this.logger.warn(at, "task request passed over: marked as the api's, and its task is not there (forgotten since)");
    return 'done';
  }

  /** Runs the task's handler once (attempt + 1), then writes its final event unless a later attempt has. */
  async runOnce(job: Job, snapshot: TaskSnapshot, input: unknown): Promise<Try> {
    const type = this.deps.registry.get(snapshot.type);
    if (!type) throw new Error(`unknown type ${snapshot.type}`);
    // One deadline per task, from its first start: a run again after a runner died gets what is left of it, so a
    // task that kills its runners still ends. Runners' clocks are compared here; they are assumed in sync.
    const timeoutMs = type.timeoutMs ?? this.deps.taskTimeoutMs;
    const firstStart = snapshot.startedAt ? Date.parse(snapshot.startedAt) : NaN;
    // A start on a clock ahead of this one gives no more than a whole deadline; an unreadable one, a whole one.
    const leftMs = Number.isFinite(firstStart) ? Math.min(timeoutMs, firstStart + timeoutMs - Date.now()) : timeoutMs;
    const clock: RunClock = { deadlineAt: Date.now() + leftMs, timeoutMs, runSince: performance.now() };
    // The deadline before a cancel: a cancel the api accepted after it (no runner was up to end the task) does not
    // win; endUnstarted's decision looks for one accepted before it.
    if (leftMs <= 0) return this.endUnstarted(job, snapshot, timedOutOutcome(timeoutMs), clock);
    if (cancelOf(this.deps.view.get(cancelKey(snapshot.taskId)), snapshot)) return this.cancelUnstarted(job, snapshot);
    const attempt = snapshot.attempt + 1;
    const journal = new TaskJournal(snapshot, job.exec, job.writer.generation);
    const started = { status: 'running' as const, attempt, startedAt: snapshot.startedAt ?? isoNow() };
    // Not awaited: it heads the run's chain of writes, so no later event of the run lands without it.
    journal.enqueue('task.started', started, { attempt, runner: this.deps.runnerId });
    const cancel = new AbortController();
    this.running.set(snapshot.taskId, cancel);
    const timedOut = new AbortController();
    // A timer cleared when the run ends: AbortSignal.timeout's cannot be, and would hold the run's signals and
    // everything listening to them until TASK_TIMEOUT_MS (an hour by default) after every task.
    const timer = setTimeout(() => timedOut.abort(new TimedOut(timeoutMs)), leftMs);
    const { signal, unlink } = linkedAbort([job.handBack, cancel.signal, timedOut.signal, journal.interrupted]);
    try {
      const outcome = await execute(type, journal, input, signal, job.exec);
      if (outcome === 'handed-back') return 'handed-back';
      if (outcome === 'interrupted') {
        // task.started or a progress write failed: the run stops at once and is tried again once the partition's
        // writes are settled, rather than running the handler on for nothing.
        await journal.flush();
        this.writers.markUnsure(job.partition);
        return job.handBack.aborted ? 'handed-back' : 'retry';
      }
      const endedAt = isoNow();
      const decided = await decideFinal(this.decision, snapshot.taskId, outcome, clock, job.handBack);
      if (!decided) {
        await journal.flush();
        return 'handed-back';
      }
      const later = supersededBy(this.deps.view, snapshot.taskId, attempt);
      if (later) {
        await journal.flush();
        // A later attempt ran while this one did (another runner had the partition meanwhile); its final event is
        // the task's. Without one, that run was handed back, and this member, which holds the partition, runs the
        // task again rather than committing past a task that would never end.
        if (job.handBack.aborted) return 'handed-back';
        if (isFinal(later.status)) return 'done';
        // Decided again under a fresh initialization, with the view synced after it: a final event the other run
        // wrote meanwhile is then seen, and one it writes later is fenced.
        this.writers.markUnsure(job.partition);
        return 'retry';
      }
      const finished = await this.finals.finish(job, journal, decided, endedAt, clock.runSince);
      return job.handBack.aborted ? 'handed-back' : finished;
    } finally {
      unlink();
      clearTimeout(timer);
      this.running.delete(snapshot.taskId);
    }
  }

  /**
   * Cancelled before this run started: the handler never runs (nor gets a signal it might not look at), and no
   * task.started says it did. Its events go on to task.cancelled; attempt and startedAt stay as they were.
   */
  private cancelUnstarted(job: Job, snapshot: TaskSnapshot): Promise<Try> {
    return this.endUnstarted(job, snapshot, { kind: 'task.cancelled', data: {} });
  }

  /**
   * The task's final event, written instead of a run (cancelled, or its deadline passed before this run: then a cancel
   * accepted before the deadline, which the view may not show yet, is looked for first).
   */
  private async endUnstarted(job: Job, snapshot: TaskSnapshot, given: Outcome, clock?: RunClock): Promise<Try> {
    const outcome = clock ? await decideFinal(this.decision, job.taskId, given, clock, job.handBack) : given;
    if (!outcome) return 'handed-back';
    const journal = new TaskJournal(snapshot, job.exec, job.writer.generation);
    const finished = await this.finals.finish(job, journal, outcome);
    return job.handBack.aborted ? 'handed-back' : finished;
  }

  /** Stops the heartbeat this runner started (it never held the process alive). */
  close(): void {
    this.ownStalls?.stop();
  }

  private execDeps(publisher: FencingPublisher, trace: TraceContext | undefined): ExecutionDeps {
    const { view, topics, resources, kafkaTimeoutMs } = this.deps;
    return { publisher, view, topics, resources, logger: this.logger, kafkaTimeoutMs, trace };
  }
}
