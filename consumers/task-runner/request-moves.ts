import type { IncomingRecord } from '../../src/kafka/types';
import { RecordTooLargeError } from '../../src/kafka/record-size';
import type { Logger } from '../../src/logger';
import { problem } from '../../src/problems/problem-detail';
import { DEFAULT_KAFKA_TENANT, TENANT_PATTERN, type ParsedRequest } from '../../src/tasks/task-request';
import type { PartitionWriters } from './partition-writers';

/*
 * A client's task request found off its key's partition is moved there before it runs (TaskRunner.handle), so every
 * request of one task id is handled on one partition. These are the marks such a move leaves.
 */

/** On a request moved to its key's partition: where it was (`<partition>:<offset>`). It is never moved again. */
export const MOVED_FROM = 'hookstream-moved-from';
/** On the stand-in moved for a request too large to write again: the request's size in bytes. */
export const TOO_LARGE = 'hookstream-too-large';

/** What a stand-in keeps of a request too large to move: its type and tenant, when they are plausible ones. */
export function tooLargeStandIn(value: string | null): string {
  let parsed: unknown;
  try {
    parsed = value === null ? null : JSON.parse(value);
  } catch {
    return '{}';
  }
  const { type, tenant } = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  return JSON.stringify({
    type: typeof type === 'string' && type.length <= 100 ? type : undefined,
    tenant: typeof tenant === 'string' && tenant.length <= 64 ? tenant : undefined,
  });
}

/** The stand-in's refusal: task.accepted could not carry the request's input either. */
export function tooLargeRequest(value: string | null, bytes: string): Extract<ParsedRequest, { ok: false }> {
  const { type, tenant } = JSON.parse(value ?? '{}') as { type?: string; tenant?: string };
  const detail = `the request was ${bytes} bytes, more than a task's events can carry`;
  return {
    ok: false,
    type: type ?? 'unknown',
    tenant: tenant !== undefined && TENANT_PATTERN.test(tenant) ? tenant : DEFAULT_KAFKA_TENANT,
    errors: [problem('invalid-field', detail, { instance: '/input' })],
  };
}

/**
 * The request moved to its task id's partition (`home`), under its own partition's transactional id (a zombie's move
 * is fenced). Moved twice (a crash before this offset's commit), the copies meet on that partition as one task's.
 */
export async function moveRequest(
  writers: PartitionWriters,
  kafkaTimeoutMs: number,
  logger: Logger,
  { record, taskId, home }: { record: IncomingRecord; taskId: string; home: number },
): Promise<'done'> {
  const writer = await writers.checked(record.partition);
  const headers = { ...record.headers, [MOVED_FROM]: `${record.partition}:${record.offset}` };
  const moved = { topic: record.topic, partition: home, key: taskId, value: record.value, headers };
  const options = { generation: writer.generation, timeoutMs: kafkaTimeoutMs };
  try {
    await writer.publisher.publish([moved], options);
  } catch (err) {
    if (!(err instanceof RecordTooLargeError)) throw err;
    // Larger than a write of ours may be (the broker took it from the client): a stand-in goes instead, and is
    // refused there, so even this task id is handled on its own partition only.
    const standIn = {
      ...moved,
      value: tooLargeStandIn(record.value),
      headers: { ...headers, [TOO_LARGE]: String(err.bytes) },
    };
    await writer.publisher.publish([standIn], options);
  }
  logger.debug({ taskId, from: record.partition, to: home }, "task request moved to its task id's partition");
  return 'done';
}
