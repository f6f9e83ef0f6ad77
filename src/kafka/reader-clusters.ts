import type { Kafka } from 'kafkajs';
import { clusterFactory } from './kafkajs-cluster-factory';

/** kafkajs's wire values: Fetch's and ListOffsets' isolation_level, ListOffsets' earliest */
const READ_COMMITTED = 1;
const EARLIEST = -2;
/** kafkajs's own clients' default; a moved leader refreshes at once (the reading's recovery) */
const METADATA_MAX_AGE_MS = 300000;
/** idle connections kept for the next reading, and for how long */
const MAX_IDLE = 8;
const IDLE_MS = 30000;

/** A record as kafkajs's Fetch decoder gives it (kafkajs is pinned, see package.json). */
export interface FetchedMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  timestamp: string;
  headers?: Record<string, Buffer | Buffer[] | undefined>;
  isControlRecord?: boolean;
  /** the record batch it came in: its first offset and the delta of its last (compaction may have removed it) */
  batchContext: { firstOffset: string; lastOffsetDelta: number };
}

export interface FetchedPartition {
  partition: number;
  abortedTransactions: { producerId: string; firstOffset: string }[];
  messages: FetchedMessage[];
}

export interface FetchingBroker {
  fetch(request: {
    isolationLevel: number;
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<{ responses: { topicName: string; partitions: FetchedPartition[] }[] }>;
}

/** The slice of kafkajs's internal Cluster a reading uses: its own connections, read_committed. */
export interface ReadingCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addTargetTopic(topic: string): Promise<void>;
  refreshMetadata(): Promise<void>;
  findTopicPartitionMetadata(topic: string): { partitionId: number }[];
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  findBroker(node: { nodeId: string }): Promise<FetchingBroker>;
  fetchTopicsOffset(
    topics: { topic: string; fromTimestamp: number; partitions: { partition: number }[] }[],
  ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

export const FETCH_ISOLATION = READ_COMMITTED;

/** Makes cluster connections for readings: read_committed, with the client's brokers, TLS, SASL and retries. */
export function readingCluster(kafka: Kafka): () => ReadingCluster {
  const create = clusterFactory(kafka);
  return () =>
    create({
      allowAutoTopicCreation: false,
      isolationLevel: READ_COMMITTED,
      metadataMaxAge: METADATA_MAX_AGE_MS,
    }) as ReadingCluster;
}

/** The first offset a partition's log still holds (records below it were deleted). */
export async function logStart(cluster: ReadingCluster, topic: string, partition: number): Promise<bigint> {
  const [answer] = await cluster.fetchTopicsOffset([{ topic, fromTimestamp: EARLIEST, partitions: [{ partition }] }]);
  return BigInt(answer.partitions.find((p) => p.partition === partition)?.offset ?? '0');
}

/**
 * Cluster connections for partition readings. Each reading has one of its own while it runs (a broker answers a
 * connection's requests in turn, and a reading's fetch may wait at the broker for new records). A reading that
 * ends with no fetch in flight (a page of events, read to a known end) gives its connection back, and the next
 * reading starts with its connection made and its metadata known: a fetch, not a connection handshake and two
 * metadata round trips first.
 */
export class ReaderClusters {
  private readonly make: () => ReadingCluster;
  private readonly idle: { cluster: ReadingCluster; timer: NodeJS.Timeout }[] = [];
  private closed = false;

  constructor(kafka: Kafka) {
    this.make = readingCluster(kafka);
  }

  /** The most recently idle connection, or a new one (not yet connected: ReadingCluster.connect is idempotent). */
  take(): ReadingCluster {
    const kept = this.idle.pop();
    if (!kept) return this.make();
    clearTimeout(kept.timer);
    return kept.cluster;
  }

  /** Back for the next reading: only a connection with nothing in flight, whose last request succeeded. */
  give(cluster: ReadingCluster): void {
    if (this.closed || this.idle.length >= MAX_IDLE) {
      void cluster.disconnect().catch(() => undefined);
      return;
    }
    const kept = {
      cluster,
      timer: setTimeout(() => {
        const at = this.idle.indexOf(kept);
        if (at >= 0) this.idle.splice(at, 1);
        void cluster.disconnect().catch(() => undefined);
      }, IDLE_MS),
    };
    kept.timer.unref();
    this.idle.push(kept);
  }

  get idleCount(): number {
    return this.idle.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = this.idle.splice(0);
    await Promise.all(
      all.map(({ cluster, timer }) => {
        clearTimeout(timer);
        return cluster.disconnect().catch(() => undefined);
      }),
    );
  }
}
