import type { ConsumerHandle } from '../../src/kafka/types';
import { TaskRunner, type TaskRunnerDeps } from './task-runner';

/** How long runs under way may go on to their end when the runner stops, before they are handed back. */
const STOP_GRACE_MS = 5000;

/**
 * The task runner: a consumer group on the task requests topic. Each request is run to exactly one final event;
 * its offset is committed only after that, so a runner that dies mid-task leaves the request to the group, and the
 * task is run again (attempt + 1) by whichever runner gets its partition.
 */
export async function startTaskRunner(deps: TaskRunnerDeps): Promise<ConsumerHandle> {
  const runner = new TaskRunner(deps);
  const consumer = await deps.runGroupConsumer({
    groupId: deps.groupId,
    topics: [deps.topics.taskRequests],
    maxInFlight: deps.concurrency,
    // A SIGTERM (a deploy) lets a run that is about to end end here, rather than start over elsewhere as attempt 2.
    stopGraceMs: STOP_GRACE_MS,
    handle: (record, handBack) => runner.handleSerially(record, handBack),
    onRevoked: (topic, partition) => {
      runner.logger.info({ topic, partition }, 'partition revoked; its running tasks are handed back');
      void runner.writers.release(partition);
    },
  });
  return {
    async stop() {
      await consumer.stop();
      await runner.writers.closeAll();
      runner.close();
    },
  };
}
