import type { Logger } from '../logger';
import { withKafkaTimeout } from './kafka-timeout';
import {
  FETCH_ISOLATION,
  type FetchedMessage,
  type FetchedPartition,
  type FetchingBroker,
  type ReaderClusters,
  type ReadingCluster,
} from './reader-clusters';
import { KafkaUnavailableError, type IncomingRecord, type PartitionReadOptions, type PartitionReading } from './types';

/** one fetch per reader: what a slow receiver can make this process hold for it */
const MAX_FETCH_BYTES = 256 * 1024;
/** how long the broker holds a fetch that found nothing new */
const MAX_WAIT_MS = 1000;
/** kafkajs's wire values for ListOffsets' earliest and latest */
const EARLIEST = -2;
const LATEST = -1;
/** a failing fetch is tried again after this, doubling up to the max: the reading outlives a broker restart */
const RETRY_BASE_MS = 100;
const RETRY_MAX_MS = 2000;
/** answers that say the partition's leader is elsewhere, or not known yet: fresh metadata, then fetch again */
const STALE_METADATA = new Set([
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'UNKNOWN_TOPIC_OR_PARTITION',
]);

// kafkajs's own filter of aborted transactions' records (with hookstream's patch, src/kafka/patches): the
// consumer's rule, so a reading hides exactly what a read_committed kafkajs consumer hides.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const filterAbortedMessages = require('kafkajs/src/consumer/filterAbortedMessages') as (batch: {
  messages: FetchedMessage[];
  abortedTransactions: FetchedPartition['abortedTransactions'];
}) => FetchedMessage[];

interface Waiter {
  target: bigint;
  resolve(): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

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
  /** a request is on the connection (connecting, a lookup, a fetch), or the last one failed */
  private busy = true;
  private readonly waiters = new Set<Waiter>();

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
    try {
      const broker = await withKafkaTimeout(this.connect(), timeoutMs, `reader of ${topic}/${partition}`);
      void this.read(broker);
    } catch (err) {
      await this.stop();
      if (err instanceof KafkaUnavailableError) throw err;
      throw new KafkaUnavailableError('the partition reader did not start', err);
    }
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

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new KafkaUnavailableError('reader stopped'));
    }
    this.waiters.clear();
    this.onStopped(this);
    // With nothing on the connection, the loop will send nothing more (it sees `stopped` first): another reading
    // may have it. A page read to its end, or to its task's final event, stops this way.
    if (!this.busy) {
      this.clusters.give(this.cluster);
      return;
    }
    // A fetch in flight is rejected by the disconnect; the loop sees `stopped` and ends without a word. The loop
    // is not awaited: it may be waiting for a receiver that is itself waiting for its client.
    await this.cluster.disconnect().catch(() => undefined);
  }

  private async connect(): Promise<FetchingBroker> {
    await this.cluster.connect();
    await this.cluster.addTargetTopic(this.options.topic);
    return this.leader();
  }

  private async leader(): Promise<FetchingBroker> {
    const { topic, partition } = this.options;
    const leaders = Object.entries(this.cluster.findLeaderForPartitions(topic, [partition]));
    const nodeId = leaders.find(([, ps]) => ps.includes(partition))?.[0];
    if (nodeId === undefined) throw new KafkaUnavailableError(`no leader known for ${topic}/${partition}`);
    return this.cluster.findBroker({ nodeId });
  }

  /**
   * Fetches until stopped, or until the position reaches `until`. A failure is tried again with backoff, from the
   * same position: nothing is skipped, and a broker restart only pauses the reading.
   */
  private async read(first: FetchingBroker): Promise<void> {
    let broker: FetchingBroker | undefined = first;
    let failures = 0;
    while (!this.stopped && (this.until === undefined || this.position < this.until)) {
      this.busy = true;
      try {
        broker ??= await this.leader();
        const answer = await this.fetch(broker);
        this.busy = false;
        failures = 0;
        if (answer) await this.handOver(answer);
      } catch (err) {
        if (this.stopped) return;
        this.busy = true;
        broker = undefined;
        failures += 1;
        await this.recover(err, failures);
      }
    }
  }

  private async fetch(broker: FetchingBroker): Promise<{ fetchOffset: bigint; data: FetchedPartition } | undefined> {
    const { topic, partition } = this.options;
    const fetchOffset = this.position;
    const { responses } = await broker.fetch({
      isolationLevel: FETCH_ISOLATION,
      maxWaitTime: MAX_WAIT_MS,
      minBytes: 1,
      maxBytes: MAX_FETCH_BYTES,
      topics: [{ topic, partitions: [{ partition, fetchOffset: fetchOffset.toString(), maxBytes: MAX_FETCH_BYTES }] }],
    });
    const data = responses.find((r) => r.topicName === topic)?.partitions.find((p) => p.partition === partition);
    return data && !this.stopped ? { fetchOffset, data } : undefined;
  }

  private async handOver({ fetchOffset, data }: { fetchOffset: bigint; data: FetchedPartition }): Promise<void> {
    const { topic, partition } = this.options;
    // A fetch answers whole record batches: the one holding fetchOffset may begin before it, the last may end
    // after `until`.
    const within = data.messages.filter((m) => {
      const offset = BigInt(m.offset);
      return offset >= fetchOffset && (this.until === undefined || offset < this.until);
    });
    if (within.length === 0) {
      // Only a compacted log answers records that all lie before the offset asked for (this reader serves the
      // events topic, which is not compacted): the same fetch again, but not in a busy loop.
      if (data.messages.length > 0) await new Promise((r) => setTimeout(r, RETRY_BASE_MS));
      return;
    }
    const committed = filterAbortedMessages({ messages: within, abortedTransactions: data.abortedTransactions });
    for (const m of committed) {
      if (m.isControlRecord) continue;
      if (this.stopped) return;
      await this.options.onRecord(asIncoming(topic, partition, m));
      this.advance(BigInt(m.offset) + 1n);
    }
    // Markers and aborted records are passed over: the position moves past the last record of the answer.
    if (!this.stopped) this.advance(BigInt(within[within.length - 1].offset) + 1n);
  }

  private async recover(err: unknown, failures: number): Promise<void> {
    const { topic, partition } = this.options;
    const type = (err as { type?: string }).type;
    if (
      type === 'OFFSET_OUT_OF_RANGE' &&
      (await this.outOfRange().then(
        () => true,
        () => false,
      ))
    )
      return;
    if (failures === 1 || failures % 10 === 0) {
      this.logger.warn({ err, topic, partition, failures }, 'partition reader fetch failed; fetching again');
    }
    if (type === undefined || STALE_METADATA.has(type) || failures > 1) {
      await this.cluster.refreshMetadata().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (failures - 1))));
  }

  /**
   * The position is no longer in the log. Below its start, the records were deleted (retention): the reading goes
   * on from the first record there is, as a Kafka consumer with auto.offset.reset=earliest would. Past its end (a
   * log truncated by an unclean leader election), it goes on from the end.
   */
  private async outOfRange(): Promise<void> {
    const { topic, partition } = this.options;
    const offsetAt = async (fromTimestamp: number) => {
      const [answer] = await this.cluster.fetchTopicsOffset([{ topic, fromTimestamp, partitions: [{ partition }] }]);
      return BigInt(answer.partitions.find((p) => p.partition === partition)?.offset ?? '0');
    };
    const earliest = await offsetAt(EARLIEST);
    const next = this.position < earliest ? earliest : await offsetAt(LATEST);
    this.logger.warn({ topic, partition, from: String(this.position), to: String(next) }, 'reader position not in log');
    this.position = next;
    this.advance(next);
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

function asIncoming(topic: string, partition: number, m: FetchedMessage): IncomingRecord {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = String(v);
  return {
    topic,
    partition,
    offset: m.offset,
    key: m.key?.toString() ?? null,
    value: m.value?.toString() ?? null,
    timestamp: m.timestamp,
    headers,
  };
}
