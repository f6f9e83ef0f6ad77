import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { IncomingRecord, PartitionReading } from '../kafka/types';
import type { Logger } from '../logger';
import { pause } from '../lib/abortable-sleep';
import { retryDelayMs } from '../lib/backoff';
import { asTaskEvent, resumesAfterFinal, type EventReadDeps } from './task-event-page';
import type { TaskSnapshot } from './task-snapshot';

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
  /** resolves once the view shows the task ended (or forgotten), or when `signal` aborts */
  untilEnded?(taskId: string, signal: AbortSignal): Promise<unknown>;
}

/** a wait that only the stream's end cuts short (the largest delay a Node timer takes) */
const NO_DEADLINE = 2 ** 31 - 1;

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
  /** aborted when the stream ends: what waits for it stops waiting */
  private readonly over = new AbortController();
  /** the client closed the connection: whatever open() meets after that is not a failure to answer */
  private clientLeft = false;
  /** the head is written: from then on a reading that fails ends the stream */
  private headSent = false;
  /** why Kafka refused the reading before the head was written: opening fails with it */
  private refused: Error | undefined;
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
    // Ended before the request: its events all lie below the log's end, open transactions' records included (below
    // the last stable offset they may not: a transaction left open holds it under records committed after it).
    const end = finalBefore ? BigInt(await this.deps.reader.logEnd(topic, partition, remaining())) : undefined;
    if (end !== undefined && fromOffset >= end) return { nothing: true };
    if (end !== undefined && (await resumesAfterFinal(this.deps, this.task, fromOffset, remaining()))) {
      return { nothing: true };
    }
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
        // Kafka refused the reading for good. Before the head, opening fails with why (records deleted under it
        // meanwhile: the client's 410, not an empty 200, after which an EventSource would not reconnect); after, the
        // client is told by the stream's end, and reconnects.
        onError: (err) => {
          if (!this.headSent) {
            this.refused ??= err;
            void this.reading?.stop();
            return;
          }
          this.deps.logger.warn({ err, taskId: this.task.taskId }, 'task event stream lost its reader');
          this.end();
        },
      },
      remaining(),
    );
    await this.throwIfRefused();
    if (end !== undefined) {
      // Nothing of the task comes after its final event: reaching the end known at the request is the end.
      const reachedEnd = this.reading.reached(end.toString(), NO_DEADLINE).then(() => true);
      let waited: NodeJS.Timeout | undefined;
      // An open transaction below the end holds the reading: after KAFKA_TIMEOUT_MS the stream is answered, and
      // waits, as a running task's does (no 204 while an event may still come; no 503 for a task that has ended).
      const holding = new Promise<false>((resolve) => (waited = setTimeout(() => resolve(false), remaining())));
      const nothing = await Promise.race([
        found.then(() => false),
        holding,
        reachedEnd.catch(async (err: unknown) => {
          await this.reading?.stop();
          throw this.refused ?? err;
        }),
      ]).finally(() => clearTimeout(waited));
      if (nothing) {
        await this.reading.stop();
        return { nothing: true };
      }
      await this.throwIfRefused();
      void reachedEnd.then(
        () => this.end(),
        () => this.end(),
      );
    }
    // The client may have left while the reader opened: no head for a closed connection.
    if (this.clientLeft) return { gone: true };
    this.headSent = true;
    this.res.writeHead(200, { ...this.headers, ...EVENT_STREAM_HEAD });
    if (this.res.destroyed) this.end();
    // Tells a proxy the stream is alive, and EventSource clients to retry after a second.
    this.res.write(`retry: 1000\n: events of task ${this.task.taskId}\n\n`);
    this.headDone();
    this.scheduleHeartbeat();
    if (end === undefined) void this.endOnceEnded();
    return { served: this.done };
  }

  /**
   * A task running when the stream opened, as this process's view showed it: the stream ends after its final event.
   * A view behind the runner may show running a task whose final event is already before the cursor (a client that
   * resumes after the last event on another api instance): such a stream ends once the view shows the task ended and
   * the reading has passed the log's end as it was then, which lies past every event of the task.
   */
  private async endOnceEnded(): Promise<void> {
    const { untilEnded, reader, timeoutMs, logger } = this.deps;
    if (!untilEnded) return;
    try {
      await untilEnded(this.task.taskId, this.over.signal);
    } catch (err) {
      // Not knowing when the task ends, the stream ends after its final event only: never before it.
      logger.error({ err, taskId: this.task.taskId }, 'task event stream cannot learn when its task ends');
      return;
    }
    const { topic, partition, taskId } = this.task;
    for (let failures = 1; !this.ended; failures += 1) {
      try {
        const end = await reader.logEnd(topic, partition, timeoutMs);
        await this.reading?.reached(end, NO_DEADLINE);
        this.end();
        return;
      } catch (err) {
        // Stopped with the stream, or Kafka did not answer: asked again until the stream ends one way or the other.
        if (this.ended) return;
        logger.warn({ err, taskId }, 'task event stream could not find the end of its ended task; trying again');
        await pause(retryDelayMs(failures, 500, 5000), this.over.signal);
      }
    }
  }

  /** Before the head: a reading Kafka refused fails the opening, with why. */
  private async throwIfRefused(): Promise<void> {
    if (!this.refused) return;
    await this.reading?.stop();
    throw this.refused;
  }

  /** Ends the stream (the client left, the server closes, or the task ended). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.over.abort();
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
