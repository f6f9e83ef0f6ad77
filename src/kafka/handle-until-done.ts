import { pause } from '../lib/abortable-sleep';
import { retryDelayMs } from '../lib/backoff';
import type { Logger } from '../logger';
import type { CommitHold, GroupConsumerOptions, IncomingRecord } from './types';

/**
 * Runs a group consumer's handler on a record until it succeeds or the work is handed back (`signal`): a failure is
 * logged and retried with backoff, never skipped, so the partition's commit stays below the record meanwhile.
 */
export async function handleUntilDone(
  handle: GroupConsumerOptions['handle'],
  record: IncomingRecord,
  signal: AbortSignal,
  holdCommit: (offset: bigint) => CommitHold,
  logger: Logger,
): Promise<void> {
  for (let failures = 1; ; failures += 1) {
    try {
      await handle(record, signal, holdCommit);
      return;
    } catch (err) {
      if (signal.aborted) return;
      const retryInMs = retryDelayMs(failures, 200, 10000);
      const at = { topic: record.topic, partition: record.partition, offset: record.offset, failures, retryInMs };
      logger.error({ ...at, err }, 'record handler failed; handling it again');
      await pause(retryInMs, signal);
      if (signal.aborted) return;
    }
  }
}
