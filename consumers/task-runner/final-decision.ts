import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import type { Stalls } from '../../src/lib/loop-stalls';
import type { Logger } from '../../src/logger';
import type { StateView } from '../../src/kafka/types';
import { problemType } from '../../src/problems/problem-types';
import { cancelKey, cancelOf, isSnapshot, type TaskRecord } from '../../src/tasks/task-snapshot';
import { timedOutOutcome, type Outcome } from './task-execution';

export interface DecisionDeps {
  view: StateView<TaskRecord>;
  stalls: Stalls;
  logger: Logger;
  kafkaTimeoutMs: number;
  /** first pause before a sync that failed is tried again (it doubles, up to 10 s) */
  firstRetryMs: number;
}

/** What a run's end is judged against. */
export interface RunClock {
  /** epoch ms: the task's first start plus its timeout */
  deadlineAt: number;
  timeoutMs: number;
  /** `performance.now()` when the run began: a stall since then makes the view's word doubtful */
  runSince: number;
}

const TIMED_OUT = problemType('task-timed-out');
const CANCELLED: Outcome = { kind: 'task.cancelled', data: {} };

const timedOut = (o: Outcome) => o.kind === 'task.failed' && o.data.problem.type === TIMED_OUT;

/**
 * The outcome a run ends in, by the task's clock and the order things happened in, not by which of the run's
 * timers and messages this process happened to handle first. After a stall (see loop-stalls.ts) the handler can
 * settle before the deadline's timer fires, and a cancel accepted meanwhile is not in the view yet; the deadline's
 * own timer can fire before the view reads a cancel accepted in time.
 *
 * - A handler's result that comes at or after the deadline is too late: the task timed out.
 * - A timeout, or any end after a stall, is decided with the view synced: a cancel the api accepted (202) before the
 *   task ended that way wins, as it would have had the runner seen it at once.
 *
 * Undefined when the task was handed back while the view could not be synced.
 */
export async function decideFinal(
  deps: DecisionDeps,
  taskId: string,
  given: Outcome,
  clock: RunClock,
  handBack: AbortSignal,
): Promise<Outcome | undefined> {
  if (given.kind === 'task.cancelled') return given;
  const decidedAt = Date.now();
  const outcome = decidedAt >= clock.deadlineAt && !timedOut(given) ? timedOutOutcome(clock.timeoutMs) : given;
  if (!timedOut(outcome) && !deps.stalls.since(clock.runSince)) return outcome;
  // A sync begun in this very millisecond may have begun before the cancel landed: one begun after it is asked for.
  if (!(await synced(deps, taskId, decidedAt + 1, handBack))) return undefined;
  const task = deps.view.get(taskId);
  const cancel = cancelOf(deps.view.get(cancelKey(taskId)), isSnapshot(task) ? task : undefined);
  if (cancel === undefined) return outcome;
  const requestedAt = Date.parse(cancel.requestedAt);
  // The end this outcome stands for: the deadline, for a timeout; otherwise when it was decided here.
  const endedAt = Math.min(decidedAt, clock.deadlineAt);
  return Number.isFinite(requestedAt) && requestedAt > endedAt ? outcome : CANCELLED;
}

/** Syncs the view past `time`, again until it does or the task is handed back. */
async function synced(deps: DecisionDeps, taskId: string, time: number, handBack: AbortSignal): Promise<boolean> {
  for (let failures = 1; !handBack.aborted; failures += 1) {
    try {
      await deps.view.syncedSince(time, deps.kafkaTimeoutMs);
      return true;
    } catch (err) {
      deps.logger.warn({ taskId, err }, 'Kafka is not answering; the final event is decided once it does');
      await pause(retryDelayMs(failures, deps.firstRetryMs, 10000), handBack);
    }
  }
  return false;
}
