import { RecordsDeletedError, type IncomingRecord, type PartitionReader, type PartitionReading } from '../kafka/types';
import { isFinal, type TaskSnapshot } from './task-snapshot';

/*
 * A task's events as read from its partition: their coordinates (the SSE ids and the cursors) and a page of them.
 * The stream (task-event-stream.ts) sends the same events one by one.
 */

const FINAL_EVENTS = new Set(['task.succeeded', 'task.failed', 'task.cancelled']);

/**
 * `<partition>:<offset>`: an event's Kafka coordinate, its SSE id and the cursor to resume after it. The offset may be
 * -1: the cursor is exclusive, so the one before a partition's first record (Kafka position 0) is `<partition>:-1`.
 */
export const COORDINATE_PATTERN = '^\\d{1,9}:(-1|\\d{1,19})$';

export function coordinate(partition: number, offset: string | bigint): string {
  return `${partition}:${offset}`;
}

export function parseCoordinate(value: string): { partition: number; offset: bigint } | undefined {
  if (!new RegExp(COORDINATE_PATTERN).test(value)) return undefined;
  const [p, o] = value.split(':');
  return { partition: Number(p), offset: BigInt(o) };
}

/** One of the task's events as read from its partition. */
export interface ReadTaskEvent {
  id: string;
  partition: number;
  offset: string;
  kind: string;
  /** the record's value, as written (JSON text) */
  value: string;
  final: boolean;
}

export function asTaskEvent(record: IncomingRecord, taskId: string): ReadTaskEvent | undefined {
  if (record.key !== taskId || record.value === null) return undefined;
  let kind = record.headers.ce_type;
  if (!kind) {
    try {
      kind = String((JSON.parse(record.value) as { event?: unknown }).event ?? 'message');
    } catch {
      kind = 'message';
    }
  }
  return {
    id: coordinate(record.partition, record.offset),
    partition: record.partition,
    offset: record.offset,
    kind,
    value: record.value,
    final: FINAL_EVENTS.has(kind),
  };
}

export interface EventReadDeps {
  reader: PartitionReader;
  /** KAFKA_TIMEOUT_MS: opening a reader, or reading a page, answers 503 after it */
  timeoutMs: number;
}

/**
 * Whether the cursor (the offset before `fromOffset`) is the task's final event. Nothing of the task follows that
 * one (one final event per task, its last), so a client resuming after it (an EventSource reconnects with its id)
 * is told so from that one record, not from a reading to the log's end: past a long tail of other tasks' records
 * that reading outlasted KAFKA_TIMEOUT_MS and answered as if more might come (200 where 204, `complete: false`), and a
 * transaction left open after the final event held it the same way. False when it cannot tell in `timeoutMs` (the
 * cursor's record deleted, or held by a transaction open below it): the reading to the end decides then.
 */
export async function resumesAfterFinal(
  deps: EventReadDeps,
  task: TaskSnapshot,
  fromOffset: bigint,
  timeoutMs: number,
): Promise<boolean> {
  const cursor = fromOffset - 1n;
  if (!isFinal(task.status) || cursor < BigInt(task.offset)) return false;
  let final = false;
  let reading: PartitionReading | undefined;
  try {
    reading = await deps.reader.open(
      {
        topic: task.topic,
        partition: task.partition,
        fromOffset: cursor.toString(),
        until: fromOffset.toString(),
        refuseDeleted: true,
        onRecord(record) {
          if (BigInt(record.offset) === cursor) final = asTaskEvent(record, task.taskId)?.final ?? false;
        },
      },
      timeoutMs,
    );
    await reading.reached(fromOffset.toString(), timeoutMs);
    return final;
  } catch {
    return false;
  } finally {
    await reading?.stop();
  }
}

/** A page of a task's events; `settled`: every record written before the request was readable (see below). */
export interface TaskEventPage {
  events: ReadTaskEvent[];
  more: boolean;
  settled: boolean;
}

/**
 * The task's events from `fromOffset` that were written before the request: at most `limit`, stopping after the final
 * event. A running task's page has what is readable now (up to the last stable offset). A committed reader cannot
 * read past a transaction still open (another producer's, or one a writer killed mid-transaction left for its
 * timeout), though records after it are committed; so a task that had ended is read up to the log's end, which the
 * reading passes once every transaction below it is decided (milliseconds, as a rule). Held longer than
 * KAFKA_TIMEOUT_MS, its page has what was readable and `settled` is false: only a settled page without the final
 * event shows that nothing of the task follows.
 */
export async function readTaskEventPage(
  deps: EventReadDeps,
  task: TaskSnapshot,
  fromOffset: bigint,
  limit: number,
): Promise<TaskEventPage> {
  const started = Date.now();
  const remaining = () => Math.max(1, deps.timeoutMs - (Date.now() - started));
  const final = isFinal(task.status);
  const { topic, partition } = task;
  const asked = final
    ? deps.reader.logEnd(topic, partition, remaining())
    : deps.reader.endOffset(topic, partition, remaining());
  const end = BigInt(await asked);
  if (fromOffset >= end) return { events: [], more: false, settled: true };
  if (await resumesAfterFinal(deps, task, fromOffset, remaining())) return { events: [], more: false, settled: true };
  const events: ReadTaskEvent[] = [];
  /** a full page is followed by another of the task's events before `end`: a next page has something now */
  let more = false;
  let enough: () => void = () => undefined;
  const full = new Promise<void>((resolve) => {
    enough = resolve;
  });
  /** why the reading ended, told after its waiters were refused (their error only says it stopped) */
  let ended: Error | undefined;
  const reading = await deps.reader.open(
    {
      topic: task.topic,
      partition: task.partition,
      fromOffset: fromOffset.toString(),
      until: end.toString(),
      // A page that passed over deleted events would call itself complete: the gap is the answer instead.
      refuseDeleted: true,
      onError: (err) => {
        ended = err;
      },
      onRecord(record) {
        if (more || events.at(-1)?.final) return;
        const e = asTaskEvent(record, task.taskId);
        if (!e) return;
        if (events.length < limit) events.push(e);
        else more = true;
        if (more || e.final) enough();
      },
    },
    remaining(),
  );
  let settled = true;
  try {
    await Promise.race([reading.reached(end.toString(), remaining()), full]);
  } catch (err) {
    // Not the reading's failure (its onError comes before this catch runs): a transaction holding it past the time.
    if (!final || ended !== undefined) throw ended instanceof RecordsDeletedError ? ended : err;
    settled = false;
  } finally {
    await reading.stop();
  }
  return { events, more, settled };
}
