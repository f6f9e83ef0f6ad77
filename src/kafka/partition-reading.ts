import { retryDelayMs } from '../lib/backoff';
import type { Logger } from '../logger';
import { withKafkaTimeout } from './kafka-timeout';
import { asIncoming, committedRecords, fetchFailureLevel, nextOffsetAfter, STALE_METADATA } from './fetched-records';
import {
  FETCH_ISOLATION,
  type FetchedPartition,
  logStart,
  type FetchingBroker,
  type ReaderClusters,
  type ReadingCluster,
} from './reader-clusters';
import { KafkaUnavailableError, RecordsDeletedError, type PartitionReadOptions, type PartitionReading } from './types';

/** one fetch per reader: what a slow receiver can make this process hold for it */
const MAX_FETCH_BYTES = 256 * 1024;
/** how long the broker holds a fetch that found nothing new */
const MAX_WAIT_MS = 1000;
/** a failing fetch is tried again after this, doubling up to the max: the reading outlives a broker restart */
const RETRY_BASE_MS = 100;
const RETRY_MAX_MS = 2000;

interface Waiter {
  target: bigint;
  resolve(): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** thrown inside the loop once the reading is stopped: whatever was awaiting ends there */
const STOPPED = new Error('reading stopped');

/**
 * One reading of one partition, assigned: Fetch requests to the partition's
 * leader from the reading's own position, read_committed, with no consumer
 * group. There is nothing to join (a group join took 25-440 ms, and 3 s on a
 * broker with the default group.initial.rebalance.delay.ms), nothing left
 * behind on the broker, and nothing to heartbeat while a slow receiver holds
 * a record.
 */
export class Reading implements PartitionReading {
  /** the next offset to hand over: everything below it was handed over, or was a marker or aborted */
  private position: bigint;
  private readonly until: bigint | undefined;
  private readonly cluster: ReadingCluster;
  private stopped = false;
  /**
   * The reading owns its connection and has a request on it (connecting, a lookup, a fetch), or its last one
   * failed. When not busy, a stop hands the connection to the next reading, and the loop never touches it again.
   */
  private busy = true;
  private readonly waiters = new Set<Waiter>();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly clusters: ReaderClusters,
    private readonly options: PartitionReadOptions,
    private readonly logger: Logger,
    private readonly onStopped: (r: Reading) => void,
  ) {
    this.position = BigInt(options.fromOffset);
    this.until = options.until === undefined ? undefined : BigInt(options.until);
    this.cluster = clusters.take();
  }

  /** Resolves once the partition's leader is known and the first fetch is on its way; rejects after timeoutMs. */
  async start(timeoutMs: number): Promise<void> {
    const { topic, partition } = this.options;
    let broker: FetchingBroker;
    try {
      broker = await withKafkaTimeout(this.connect(), timeoutMs, `reader of ${topic}/${partition}`);
    } catch (err) {
      void this.stop();
      if (err instanceof KafkaUnavailableError || err instanceof RecordsDeletedError) throw err;
      throw new KafkaUnavailableError('the partition reader did not start', err);
    }
    void this.read(broker);
  }

  reached(offset: string, timeoutMs: number): Promise<void> {
    const target = BigInt(offset);
    if (this.position >= target) return Promise.resolve();
    if (this.stopped) return Promise.reject(new KafkaUnavailableError('reader stopped'));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        target,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          reject(new KafkaUnavailableError(`the reader did not reach offset ${offset} within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  /**
   * Returns at once: a connection with a request on it is closed without waiting for the answer (kafkajs's
   * disconnect waits for requests in flight, a fetch up to MAX_WAIT_MS, a silent broker up to the request timeout),
   * and the loop closes it again if its last request reopened it.
   */
  stop(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.stopped = true;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new KafkaUnavailableError('reader stopped'));
    }
    this.waiters.clear();
    this.onStopped(this);
    // A page read to its end, or to its task's final event, stops with nothing on the connection.
    if (this.busy) this.release();
    else this.clusters.give(this.cluster);
    return Promise.resolve();
  }

  private release(): void {
    this.closing = this.cluster.disconnect().catch(() => undefined);
  }

  /** Resolves once the connection this reading closed is closed (a shutdown waits for it, bounded). */
  closed(): Promise<void> {
    return this.closing ?? Promise.resolve();
  }

  /** Awaits a request of the loop; once the reading is stopped, the connection it may have reopened is closed. */
  private async step<T>(request: Promise<T>): Promise<T> {
    let value: T;
    try {
      value = await request;
    } finally {
      if (this.stopped) this.release();
    }
    if (this.stopped) throw STOPPED;
    return value;
  }

  private async connect(): Promise<FetchingBroker> {
    const { topic, partition, refuseDeleted } = this.options;
    await this.step(this.cluster.connect());
    await this.step(this.cluster.addTargetTopic(topic));
    // Asked before the first fetch, so the receiver hears of the gap before any record (a stream before its head).
    const earliest = refuseDeleted ? await this.step(logStart(this.cluster, topic, partition)) : 0n;
    if (this.position < earliest) throw new RecordsDeletedError(topic, partition, earliest);
    return this.leader();
  }

  private async leader(): Promise<FetchingBroker> {
    const { topic, partition } = this.options;
    const leaders = Object.entries(this.cluster.findLeaderForPartitions(topic, [partition]));
    const nodeId = leaders.find(([, ps]) => ps.includes(partition))?.[0];
    if (nodeId === undefined) throw new KafkaUnavailableError(`no leader known for ${topic}/${partition}`);
    return this.step(this.cluster.findBroker({ nodeId }));
  }

  /**
   * Fetches until stopped, or until the position reaches `until`. A failure is tried again with backoff, from the
   * same position: nothing is skipped, and a broker restart only pauses the reading. What cannot get better (a
   * receiver that threw, an error Kafka calls not retriable, `giveUpAfter` failures in a row) ends it: onError.
   */
  private async read(first: FetchingBroker): Promise<void> {
    let broker: FetchingBroker | undefined = first;
    let failures = 0;
    while (!this.stopped && (this.until === undefined || this.position < this.until)) {
      this.busy = true;
      let answer: Awaited<ReturnType<Reading['fetch']>>;
      try {
        broker ??= await this.leader();
        answer = await this.fetch(broker);
        failures = 0;
      } catch (err) {
        if (this.stopped) return;
        broker = undefined;
        failures += 1;
        if (await this.recover(err, failures).catch(() => this.stopped)) return;
        continue;
      }
      this.busy = false;
      if (answer && !(await this.handOver(answer))) return;
    }
    this.busy = false;
  }

  private async fetch(broker: FetchingBroker): Promise<{ fetchOffset: bigint; data: FetchedPartition } | undefined> {
    const { topic, partition } = this.options;
    const fetchOffset = this.position;
    const { responses } = await this.step(
      broker.fetch({
        isolationLevel: FETCH_ISOLATION,
        maxWaitTime: MAX_WAIT_MS,
        minBytes: 1,
        maxBytes: MAX_FETCH_BYTES,
        topics: [
          { topic, partitions: [{ partition, fetchOffset: fetchOffset.toString(), maxBytes: MAX_FETCH_BYTES }] },
        ],
      }),
    );
    const data = responses.find((r) => r.topicName === topic)?.partitions.find((p) => p.partition === partition);
    return data ? { fetchOffset, data } : undefined;
  }

  /** Hands the answer's records over; false when the reading ended meanwhile (stopped, or its receiver threw). */
  private async handOver({ fetchOffset, data }: { fetchOffset: bigint; data: FetchedPartition }): Promise<boolean> {
    const { topic, partition } = this.options;
    for (const m of committedRecords(data, fetchOffset, this.until)) {
      if (this.stopped) return false;
      try {
        await this.options.onRecord(asIncoming(topic, partition, m));
      } catch (err) {
        // Handing the same record over again would fail the same way, for ever.
        this.fail(err, 'the receiver of a record threw');
        return false;
      }
      this.advance(BigInt(m.offset) + 1n);
    }
    if (this.stopped) return false;
    // Before a record at `until` nothing was handed over, so moving past it loses nothing.
    const next = nextOffsetAfter(data);
    if (next !== undefined) this.advance(next);
    return true;
  }

  /** Resolves true when the reading has ended (stopped, or failed for good); else after the backoff. */
  private async recover(err: unknown, failures: number): Promise<boolean> {
    const { topic, partition } = this.options;
    const { type, retriable, name } = (err ?? {}) as { type?: string; retriable?: boolean; name?: string };
    if (type === 'OFFSET_OUT_OF_RANGE') {
      // Where the log starts now is asked again after the backoff if this lookup fails.
      const moved = await this.outOfRange().catch((e: unknown) => {
        if (e === STOPPED) throw e;
        return undefined;
      });
      if (moved === 'moved') return false;
      if (moved === 'deleted') return true;
      if (moved === 'past-end') {
        this.fail(err, "the position is past the partition's end");
        return true;
      }
    }
    // Only Kafka's own answer says an error is for good (an authorization failure): kafkajs also calls its
    // exhausted connection retries not retriable, and a broker restart must only pause the reading.
    const forGood = name === 'KafkaJSProtocolError' && retriable === false;
    const giveUp = forGood || failures >= (this.options.giveUpAfter ?? Infinity);
    if (giveUp) {
      this.fail(err, `fetching failed ${failures} times in a row`);
      return true;
    }
    const level = fetchFailureLevel(type, failures);
    if (level) this.logger[level]({ err, topic, partition, failures }, 'partition reader fetch failed; fetching again');
    if (type === undefined || STALE_METADATA.has(type) || failures > 1) {
      await this.step(this.cluster.refreshMetadata().catch(() => undefined));
    }
    await this.step(new Promise((r) => setTimeout(r, retryDelayMs(failures, RETRY_BASE_MS, RETRY_MAX_MS))));
    return false;
  }

  /**
   * The position is no longer in the log. Below its start, the records were deleted (retention): the reading goes
   * on from the first record there is, as a Kafka consumer with auto.offset.reset=earliest would ('moved'), or,
   * with `refuseDeleted`, ends saying so ('deleted'). Past its end (a truncated or recreated log) it never goes back
   * to offsets below the one asked for ('past-end').
   */
  private async outOfRange(): Promise<'moved' | 'past-end' | 'deleted'> {
    const { topic, partition } = this.options;
    const earliest = await this.step(logStart(this.cluster, topic, partition));
    if (this.position >= earliest) return 'past-end';
    if (this.options.refuseDeleted) {
      this.fail(new RecordsDeletedError(topic, partition, earliest), 'records at its position were deleted');
      return 'deleted';
    }
    this.logger.warn({ topic, partition, from: String(this.position), to: String(earliest) }, 'reader skipped deleted');
    this.advance(earliest);
    return 'moved';
  }

  private fail(err: unknown, why: string): void {
    const { topic, partition } = this.options;
    const error = err instanceof Error ? err : new Error(String(err));
    this.logger.warn({ err: error, topic, partition }, `partition reading ended: ${why}`);
    void this.stop();
    this.options.onError?.(error);
  }

  private advance(next: bigint): void {
    if (next > this.position) this.position = next;
    for (const w of this.waiters) {
      if (w.target > this.position) continue;
      clearTimeout(w.timer);
      this.waiters.delete(w);
      w.resolve();
    }
  }
}
