import type { Kafka } from 'kafkajs';
import { clusterFactory } from './kafkajs-cluster-factory';
import { isConnectionFailure } from './kafka-failure';
import { KafkaUnavailableError } from './types';

/** kafkajs's wire values for ListOffsets' isolation_level */
const READ_UNCOMMITTED = 0;
const READ_COMMITTED = 1;
const LATEST = -1;
const EARLIEST = -2;
/** kafkajs's default for its producers and consumers */
const METADATA_MAX_AGE_MS = 300000;

/** The slice of kafkajs's internal Cluster this module uses (kafkajs is pinned, see package.json). */
interface KafkajsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addTargetTopic(topic: string): Promise<void>;
  refreshMetadataIfNecessary(): Promise<void>;
  refreshMetadata(): Promise<void>;
  findTopicPartitionMetadata(topic: string): { partitionId: number }[];
  fetchTopicsOffset(
    topics: { topic: string; fromTimestamp: number; partitions: { partition: number }[] }[],
  ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

/**
 * The high watermark of every partition of a topic: the end of the log,
 * records of open transactions included.
 *
 * Why not the admin client's fetchTopicOffsets: kafkajs sends its ListOffsets
 * as read_committed, so it answers the last stable offset. A transaction's
 * markers are written partition by partition, so for a moment a reader can
 * see a committed record in one partition (say task.accepted) while the
 * subscription written in the same transaction is still below the last stable
 * offset of another. A view that must have applied "everything committed
 * before this event" therefore waits for the high watermark: its read_committed
 * consumer gets there only once every transaction that had written by then is
 * decided, the one that wrote the event included.
 *
 * kafkajs offers no isolation level on its admin client, so a cluster
 * connection of its own is made through kafkajs's cluster factory
 * (kafkajs-cluster-factory.ts); test/kafka/high-watermarks.test.ts proves the answer
 * against a real broker with a transaction left open.
 */
export class HighWatermarks {
  private readonly cluster: KafkajsCluster;
  private connecting: Promise<void> | undefined;
  private resetting: Promise<void> | undefined;
  /** Closed for good: a call that comes later (a sync begun before the stop) must not connect the cluster again. */
  private closed = false;

  /** With `lastStable`, the last stable offsets instead (read_committed): where a committed reader can get to now. */
  constructor(kafka: Kafka, options: { lastStable?: boolean } = {}) {
    const create = clusterFactory(kafka);
    this.cluster = create({
      allowAutoTopicCreation: false,
      isolationLevel: options.lastStable ? READ_COMMITTED : READ_UNCOMMITTED,
      // kafkajs's own clients get this default from their factories, its cluster factory gives 0: metadata that
      // expires at once, which made every call (one per view sync) a Metadata round trip before its ListOffsets.
      // A moved leader or a failed call still refreshes at once (see of()).
      metadataMaxAge: METADATA_MAX_AGE_MS,
    }) as KafkajsCluster;
  }

  /**
   * partition → high watermark; one ListOffsets round trip per leader once metadata is known. At `start`, the log
   * start offsets instead: the first offset each partition still holds (the records below were deleted).
   */
  async of(topic: string, at: 'end' | 'start' = 'end'): Promise<Map<number, bigint>> {
    if (this.closed) throw new KafkaUnavailableError('the high-watermark client is closed');
    // A reset's disconnect first: kafkajs's pool, still half connected, would be taken as connected and fail again.
    await this.resetting;
    const connecting = (this.connecting ??= this.cluster.connect());
    try {
      await connecting;
      await this.cluster.addTargetTopic(topic);
      await this.cluster.refreshMetadataIfNecessary();
      const partitions = this.cluster.findTopicPartitionMetadata(topic).map((p) => ({ partition: p.partitionId }));
      const [answer] = await this.cluster.fetchTopicsOffset([
        { topic, fromTimestamp: at === 'end' ? LATEST : EARLIEST, partitions },
      ]);
      return new Map((answer?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
    } catch (err) {
      if (isConnectionFailure(err) && this.connecting === connecting) {
        // A new connection for the next call. Kept, a connection whose handshake a stalled broker broke off stays
        // "connected" to kafkajs with no API versions, and every later call failed until the process restarted.
        this.connecting = undefined;
        this.resetting = this.cluster.disconnect().catch(() => undefined);
      } else {
        // A moved leader or a stale partition list: the next call asks with fresh metadata.
        await this.cluster.refreshMetadata().catch(() => undefined);
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.connecting = undefined;
    await this.cluster.disconnect().catch(() => undefined);
  }
}
