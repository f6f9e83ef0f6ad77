import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import type { Logger } from '../../src/logger';
import type { ServiceMetrics } from '../../src/metrics/metrics';
import type { StateView } from '../../src/kafka/types';
import { isFinal, isSnapshot, type TaskRecord, type TaskSnapshot } from '../../src/tasks/task-snapshot';
import type { CheckedWriter, PartitionWriters } from './partition-writers';
import { tooLargeProblem, type Outcome, type TaskJournal } from './task-execution';
import { RecordTooLargeError } from '../../src/kafka/record-size';
import { isoNow } from '../../src/lib/iso-now';

/** The one run (or rejection) of a task that may write its final event: its partition's writer and hand-back. */
export interface FinalJob {
  taskId: string;
  partition: number;
  handBack: AbortSignal;
  writer: CheckedWriter;
}

export interface FinalEventDeps {
  writers: PartitionWriters;
  view: StateView<TaskRecord>;
  logger: Logger;
  /** first pause before the partition's writes are settled again (it doubles, up to 10 s) */
  firstRetryMs: number;
  metrics?: ServiceMetrics;
}

const STATUS_OF: Record<Outcome['kind'], 'succeeded' | 'failed' | 'cancelled'> = {
  'task.succeeded': 'succeeded',
  'task.failed': 'failed',
  'task.cancelled': 'cancelled',
};

/**
 * Writes a task's final event exactly once. It is written only under the partition writer's initialization after
 * which the view was seen to hold no final event for the task. An uncertain write (a timeout, a broker fault) is
 * never simply repeated: the publisher settles it for good, the view is synced, and the final is written again only
 * if it is still missing.
 */
export class FinalEventWriter {
  constructor(private readonly deps: FinalEventDeps) {}

  /**
   * Writes the final event behind the run's earlier ones, in their chain, and waits until it is in Kafka and in the
   * view: 'retry' when an earlier write failed (the final was then refused unsent, or landed with them in one
   * transaction whose answer was lost; the next try settles and syncs before deciding). `finishedAt`: when the outcome
   * was decided, which a sync before the write (final-decision.ts) must not move past the deadline. `runSince`:
   * `performance.now()` at this run's start, for the duration metric (none: the task ended without a run).
   */
  async finish(
    job: FinalJob,
    journal: TaskJournal,
    given: Outcome,
    finishedAt = isoNow(),
    runSince?: number,
  ): Promise<'done' | 'retry'> {
    let outcome = given;
    let change: Partial<TaskSnapshot> = { status: STATUS_OF[outcome.kind], finishedAt, ...outcome.data };
    let replaced = false;
    let writer = job.writer;
    let final = journal.write(outcome.kind, change, outcome.data, {
      generation: writer.generation,
      chain: journal.chain,
    });
    // Awaited below in either case; it may fail while the earlier writes are awaited, which is not unhandled.
    final.catch(() => undefined);
    if (!(await journal.flush())) {
      await final.catch(() => undefined);
      this.deps.writers.markUnsure(job.partition);
      return 'retry';
    }
    while (!job.handBack.aborted) {
      try {
        await final.catch((err: unknown) => {
          // A result (or problem) larger than Kafka takes: nothing was sent, and sending it again would fail again.
          // The task fails instead, saying so, in the same chain: its snapshot then holds no input, result or problem
          // of the handler's.
          if (!(err instanceof RecordTooLargeError) || replaced) throw err;
          replaced = true;
          this.deps.logger.warn({ taskId: job.taskId, err }, 'final event too large for Kafka; the task fails');
          outcome = { kind: 'task.failed', data: { problem: tooLargeProblem(err) } };
          change = { status: 'failed', finishedAt: change.finishedAt, result: undefined, ...outcome.data };
          return journal.write(outcome.kind, change, outcome.data, {
            generation: writer.generation,
            chain: journal.chain,
          });
        });
        // This run's, not the snapshot's startedAt: that is the first attempt's, and a run again after a runner died
        // would count the time no runner ran it.
        const seconds = runSince === undefined ? undefined : (performance.now() - runSince) / 1000;
        this.deps.metrics?.taskFinished(STATUS_OF[outcome.kind], journal.current.type, seconds);
        return 'done';
      } catch (err) {
        this.deps.writers.markUnsure(job.partition);
        this.deps.logger.warn(
          { taskId: job.taskId, err },
          'the final event may not have landed; settling it before deciding',
        );
      }
      // The failed write may have committed under this very generation (its answer or the view's wait was what
      // failed), so the generation proves nothing now: write again only once the view, synced after the
      // publisher settled, shows no final event.
      const checked = await this.settledWithoutFinal(job);
      if (!checked) return 'done';
      writer = checked;
      final = journal.write(outcome.kind, change, outcome.data, { generation: writer.generation });
      // Awaited at the top of the loop, unless the task is handed back first (a SIGTERM): then it must not be an
      // unhandled rejection when the publisher closes under it.
      final.catch(() => undefined);
    }
    return 'done';
  }

  /**
   * Settles the partition's writes and syncs the view, again until it can say: the writer to write the final with,
   * or undefined when the final is there or the task was handed back.
   */
  private async settledWithoutFinal(job: FinalJob): Promise<CheckedWriter | undefined> {
    for (let failures = 1; !job.handBack.aborted; failures += 1) {
      try {
        await pause(retryDelayMs(failures, this.deps.firstRetryMs / 4, 10000), job.handBack);
        // Handed back during the pause (a rebalance released the partition's writer): a resolve now would make a
        // writer under the partition's transactional id, and fence its new owner.
        if (job.handBack.aborted) return undefined;
        const writer = await this.deps.writers.resolved(job.partition);
        const seen = this.deps.view.get(job.taskId);
        return isSnapshot(seen) && isFinal(seen.status) ? undefined : writer;
      } catch (err) {
        if (job.handBack.aborted) return undefined;
        this.deps.logger.warn(
          { taskId: job.taskId, err },
          'Kafka is not answering; the final event is decided once it does',
        );
      }
    }
    return undefined;
  }
}
