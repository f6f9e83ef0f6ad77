import { retryDelayMs } from '../lib/backoff';
import type { Logger } from '../logger';
import { committedRecords, fetchFailureLevel, nextOffsetAfter, STALE_METADATA } from './fetched-records';
import { atMost, withKafkaTimeout } from './kafka-timeout';
import { FETCH_ISOLATION, logStart, type FetchedMessage, type ReadingCluster } from './reader-clusters';
import { KafkaUnavailableError } from './types';

/** kafkajs's consumer defaults: a partition's share of a fetch, and the whole fetch */
const MAX_PARTITION_BYTES = 1024 * 1024;
const MAX_FETCH_BYTES = 10 * 1024 * 1024;
/** how long the broker holds a fetch that found nothing new (a stop waits for it no longer: it disconnects) */
const MAX_WAIT_MS = 1000;
const CLOSE_WAIT_MS = 2000;
const RETRY_BASE_MS = 100;
const RETRY_MAX_MS = 2000;

export interface TopicReadingOptions {
  topic: string;
  /** the next offset to fetch of a partition (0, the log's start, for one not read yet); asked before every fetch */
  positionOf(partition: number): bigint;
  /**
   * A fetch's committed data records of one partition from its position, in order, and where its next fetch
   * starts. Only forward: an answer older than the position (two loops while a leader moves) is ignored.
   */
  onFetched(partition: number, records: FetchedMessage[], next: bigint): void;
}

/**
 * Every partition of a topic, read committed from positions its owner keeps, assigned: Fetch requests to each
 * partition's leader, one loop (and connection) per leader broker, with no consumer group. Nothing is joined at
 * start (3 s on a broker with the default group.initial.rebalance.delay.ms), nothing is left listed, and a broker
 * restart only pauses it: a failed fetch is tried again, with fresh metadata, from the same positions.
 */
export class TopicReading {
  private readonly loops = new Set<string>();
  private stopped = false;

  constructor(
    private readonly cluster: ReadingCluster,
    private readonly options: TopicReadingOptions,
    private readonly logger: Logger,
  ) {}

  /** Resolves once the topic's partitions and leaders are known and fetching has begun; rejects after timeoutMs. */
  async start(timeoutMs: number): Promise<void> {
    const { topic } = this.options;
    try {
      await withKafkaTimeout(
        (async () => {
          await this.cluster.connect();
          await this.cluster.addTargetTopic(topic);
          if (this.partitions().length === 0) throw new KafkaUnavailableError(`no partitions known for ${topic}`);
        })(),
        timeoutMs,
        `reading of ${topic}`,
      );
    } catch (err) {
      await this.stop();
      throw err instanceof KafkaUnavailableError ? err : new KafkaUnavailableError(`${topic} did not open`, err);
    }
    this.superviseLoops();
  }

  /**
   * kafkajs's disconnect waits for the fetches in flight (up to MAX_WAIT_MS; a broker that does not answer, its
   * request timeout): a stop waits for it at most CLOSE_WAIT_MS. Each loop closes the connection again once its
   * last request is answered, in case that request reopened it.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await atMost(this.release(), CLOSE_WAIT_MS);
  }

  private release(): Promise<void> {
    return this.cluster.disconnect().then(
      () => undefined,
      () => undefined,
    );
  }

  private partitions(): number[] {
    return this.cluster.findTopicPartitionMetadata(this.options.topic).map((p) => p.partitionId);
  }

  /** leader broker → the partitions it leads, from the metadata at hand */
  private leaders(): Map<string, number[]> {
    return new Map(Object.entries(this.cluster.findLeaderForPartitions(this.options.topic, this.partitions())));
  }

  /** A loop for every leader that has none: after a start, and after metadata moved a partition. */
  private superviseLoops(): void {
    if (this.stopped) return;
    let leaders: Map<string, number[]>;
    try {
      leaders = this.leaders();
    } catch (err) {
      this.logger.warn({ topic: this.options.topic, err }, 'topic reading has no leaders; trying again');
      setTimeout(() => {
        if (!this.stopped) void this.refreshed().then(() => this.superviseLoops());
      }, RETRY_MAX_MS).unref();
      return;
    }
    for (const nodeId of leaders.keys()) {
      if (this.loops.has(nodeId)) continue;
      this.loops.add(nodeId);
      void this.loop(nodeId).finally(() => {
        this.loops.delete(nodeId);
        this.superviseLoops();
      });
    }
  }

  /** Fetches the partitions `nodeId` leads until it leads none (they moved) or the reading stops. */
  private async loop(nodeId: string): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let partitions: number[];
      try {
        partitions = this.leaders().get(nodeId) ?? [];
      } catch {
        partitions = [];
      }
      if (partitions.length === 0) return;
      try {
        await this.fetchFrom(nodeId, partitions);
        failures = 0;
      } catch (err) {
        if (!this.stopped) {
          failures += 1;
          await this.recover(err, failures);
          // Partitions may have moved to a leader that has no loop yet.
          this.superviseLoops();
        }
      }
    }
    // Stopped after a request: kafkajs reconnects for any request, so the loop closes what it may have reopened.
    void this.release();
  }

  private async fetchFrom(nodeId: string, partitions: number[]): Promise<void> {
    const { topic } = this.options;
    const broker = await this.cluster.findBroker({ nodeId });
    const from = new Map(partitions.map((p) => [p, this.options.positionOf(p)]));
    const { responses } = await broker.fetch({
      isolationLevel: FETCH_ISOLATION,
      maxWaitTime: MAX_WAIT_MS,
      minBytes: 1,
      maxBytes: MAX_FETCH_BYTES,
      topics: [
        {
          topic,
          partitions: partitions.map((partition) => ({
            partition,
            fetchOffset: String(from.get(partition)),
            maxBytes: MAX_PARTITION_BYTES,
          })),
        },
      ],
    });
    if (this.stopped) return;
    for (const data of responses.find((r) => r.topicName === topic)?.partitions ?? []) {
      const fetchOffset = from.get(data.partition);
      const next = nextOffsetAfter(data);
      if (fetchOffset === undefined || next === undefined) continue;
      this.options.onFetched(data.partition, committedRecords(data, fetchOffset), next);
    }
  }

  private async recover(err: unknown, failures: number): Promise<void> {
    const { topic } = this.options;
    const { type, partition } = err as { type?: string; partition?: number };
    if (type === 'OFFSET_OUT_OF_RANGE' && partition !== undefined) {
      const moved = await this.outOfRange(partition).then(
        () => true,
        () => false,
      );
      if (moved) return;
    }
    const level = fetchFailureLevel(type, failures);
    if (level) this.logger[level]({ err, topic, failures }, 'topic reading fetch failed; fetching again');
    if (type === undefined || STALE_METADATA.has(type) || failures > 1) await this.refreshed();
    await new Promise((r) => setTimeout(r, retryDelayMs(failures, RETRY_BASE_MS, RETRY_MAX_MS)));
  }

  /**
   * The position is below the log's start: records were deleted (a compacted topic's start moves only by an
   * operator's DeleteRecords). The view goes on from the first record there is, as a consumer with
   * auto.offset.reset=earliest would. A position past the log's end (a log truncated by an unclean leader election,
   * off by default) is not moved back: it is logged and fetched again.
   */
  private async outOfRange(partition: number): Promise<void> {
    const { topic } = this.options;
    const earliest = await logStart(this.cluster, topic, partition);
    const position = this.options.positionOf(partition);
    if (position >= earliest) throw new Error(`${topic}/${partition} position ${position} is past the log's end`);
    this.logger.warn({ topic, partition, from: String(position), to: String(earliest) }, 'records deleted before read');
    this.options.onFetched(partition, [], earliest);
  }

  private refreshed(): Promise<void> {
    return this.cluster.refreshMetadata().catch(() => undefined);
  }
}
