import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { RecordsDeletedError, type IncomingRecord, type PartitionReader, type PartitionReading } from '../kafka/types';
import type { Logger } from '../logger';
import type { TaskSnapshot } from './task-snapshot';

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

function asTaskEvent(record: IncomingRecord, taskId: string): ReadTaskEvent | undefined {
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
 * The task's events from `fromOffset` that were written before the request:
 * at most `limit`, stopping after the final event.
 */
export async function readTaskEventPage(
  deps: EventReadDeps,
  task: TaskSnapshot,
  fromOffset: bigint,
  limit: number,
): Promise<{ events: ReadTaskEvent[]; more: boolean }> {
  const started = Date.now();
  const remaining = () => Math.max(1, deps.timeoutMs - (Date.now() - started));
  const end = BigInt(await deps.reader.endOffset(task.topic, task.partition, remaining()));
  if (fromOffset >= end) return { events: [], more: false };
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
  try {
    await Promise.race([reading.reached(end.toString(), remaining()), full]);
  } catch (err) {
    throw ended instanceof RecordsDeletedError ? ended : err;
  } finally {
    await reading.stop();
  }
  return { events, more };
}

/**
 * The stream's own headers; a HEAD asking for the stream gets them too. No `Connection`: Node says keep-alive or close
 * as the client asked, and a stream that ends (after the final event) leaves a kept connection usable.
 */
export const EVENT_STREAM_HEAD: OutgoingHttpHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/** What opening a stream came to: streaming until `served`, nothing after the cursor, or a client already gone. */
export type Opened = { served: Promise<void> } | { nothing: true } | { gone: true };

export interface EventStreamDeps extends EventReadDeps {
  /** a comment line goes out at least this often */
  heartbeatMs: number;
  logger: Logger;
}

/**
 * Serves one task's events as Server-Sent Events on `res`, from `fromOffset`:
 * `id:` the coordinate, `event:` the kind, `data:` the record's value. Ends
 * after the final event, or, when the task had already ended before the
 * request, once the partition's end at the request is reached. Writes wait for
 * the client to take what was written: a slow reader holds the partition
 * reader, so this process keeps at most one fetch and one socket buffer for it.
 */
export class TaskEventStream {
  private reading: PartitionReading | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private ended = false;
  /** the client closed the connection: whatever open() meets after that is not a failure to answer */
  private clientLeft = false;
  private readonly done: Promise<void>;
  private finish: () => void = () => undefined;
  /** records wait for the head: the reader may hand one over before open() has written it */
  private readonly headWritten: Promise<void>;
  private headDone: () => void = () => undefined;

  constructor(
    private readonly deps: EventStreamDeps,
    private readonly task: TaskSnapshot,
    private readonly res: ServerResponse,
    /** headers the answer carries besides the stream's own (request id, trace, Vary) */
    private readonly headers: OutgoingHttpHeaders = {},
  ) {
    this.done = new Promise((resolve) => {
      this.finish = resolve;
    });
    this.headWritten = new Promise((resolve) => {
      this.headDone = resolve;
    });
    res.on('close', () => {
      this.clientLeft = true;
      this.end();
    });
  }

  /**
   * Opens the partition reader (a KafkaUnavailableError before anything is
   * sent becomes the client's 503), then writes the head. `served` resolves
   * once the stream has ended, for whatever reason. For a task that had ended
   * before the request, `nothing` says no event is left after the cursor: the
   * caller answers 204, which tells an EventSource to stop reconnecting. `gone`: the client left while it opened;
   * there is no one to answer, and the reader is stopped.
   */
  async open(fromOffset: bigint, finalBefore: boolean): Promise<Opened> {
    try {
      const opened = await this.opening(fromOffset, finalBefore);
      if (!this.clientLeft) return opened;
    } catch (err) {
      if (!this.clientLeft) throw err;
    }
    this.end();
    // end() ran when the client left, before the reader was there: it is stopped here.
    await this.reading?.stop();
    return { gone: true };
  }

  private async opening(fromOffset: bigint, finalBefore: boolean): Promise<Opened> {
    const started = Date.now();
    const remaining = () => Math.max(1, this.deps.timeoutMs - (Date.now() - started));
    const { topic, partition } = this.task;
    const end = finalBefore ? BigInt(await this.deps.reader.endOffset(topic, partition, remaining())) : undefined;
    if (end !== undefined && fromOffset >= end) return { nothing: true };
    let firstEvent: () => void = () => undefined;
    const found = new Promise<void>((resolve) => {
      firstEvent = resolve;
    });
    this.reading = await this.deps.reader.open(
      {
        topic: this.task.topic,
        partition: this.task.partition,
        fromOffset: fromOffset.toString(),
        // Events deleted before the cursor: opening fails before the head (the client's 410); deleted under a slow
        // stream, the stream ends (onError) and its reconnection hears of it.
        refuseDeleted: true,
        onRecord: (record) => this.onRecord(record, firstEvent),
        ...(end !== undefined ? { until: end.toString() } : {}),
        // Kafka refused the reading for good: the client is told by the stream's end, and reconnects.
        onError: (err) => {
          this.deps.logger.warn({ err, taskId: this.task.taskId }, 'task event stream lost its reader');
          this.end();
        },
      },
      remaining(),
    );
    if (end !== undefined) {
      // Nothing of the task comes after its final event: reaching the end known at the request is the end.
      const reachedEnd = this.reading.reached(end.toString(), remaining()).then(() => true);
      if (
        await Promise.race([
          found.then(() => false),
          reachedEnd.catch(async (err: unknown) => {
            await this.reading?.stop();
            throw err;
          }),
        ])
      ) {
        await this.reading.stop();
        return { nothing: true };
      }
      void reachedEnd.then(
        () => this.end(),
        () => this.end(),
      );
    }
    // The client may have left while the reader opened: no head for a closed connection.
    if (this.clientLeft) return { gone: true };
    this.res.writeHead(200, { ...this.headers, ...EVENT_STREAM_HEAD });
    if (this.res.destroyed) this.end();
    // Tells a proxy the stream is alive, and EventSource clients to retry after a second.
    this.res.write(`retry: 1000\n: events of task ${this.task.taskId}\n\n`);
    this.headDone();
    this.scheduleHeartbeat();
    return { served: this.done };
  }

  /** Ends the stream (the client left, the server closes, or the task ended). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.headDone();
    clearTimeout(this.heartbeat);
    void this.reading?.stop();
    if (!this.res.writableEnded) this.res.end();
    this.finish();
  }

  private async onRecord(record: IncomingRecord, found: () => void): Promise<void> {
    const e = asTaskEvent(record, this.task.taskId);
    if (!e || this.ended) return;
    found();
    await this.headWritten;
    const data = e.value
      .split(/\r\n|\r|\n/)
      .map((line) => `data: ${line}`)
      .join('\n');
    await this.write(`id: ${e.id}\nevent: ${e.kind}\n${data}\n\n`);
    if (e.final) this.end();
  }

  /** Resolves once the client has taken the chunk (or left): the reader reads nothing more meanwhile. */
  private write(chunk: string): Promise<void> {
    if (this.ended) return Promise.resolve();
    this.scheduleHeartbeat();
    if (this.res.write(chunk)) return Promise.resolve();
    return new Promise((resolve) => {
      const go = () => {
        this.res.off('drain', go);
        this.res.off('close', go);
        resolve();
      };
      this.res.on('drain', go);
      this.res.on('close', go);
    });
  }

  private scheduleHeartbeat(): void {
    clearTimeout(this.heartbeat);
    if (this.ended) return;
    this.heartbeat = setTimeout(() => {
      // A client that is not reading gets no more bytes queued, heartbeats included.
      if (!this.res.writableNeedDrain) this.res.write(': heartbeat\n\n');
      this.scheduleHeartbeat();
    }, this.deps.heartbeatMs);
  }
}
