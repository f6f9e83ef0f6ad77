/**
 * The small interfaces the rest of the code sees. Only src/kafka/ knows these
 * are backed by kafkajs, so the client library can be swapped.
 */

export type Headers = Record<string, string>;

export interface OutgoingRecord {
  topic: string;
  key: string;
  /** null is a tombstone on a compacted topic */
  value: string | null;
  headers?: Headers;
  /** chosen from the key (murmur2, as Java clients do) unless given */
  partition?: number;
}

export interface RecordPosition {
  topic: string;
  partition: number;
  offset: string;
}

export interface IncomingRecord extends RecordPosition {
  key: string | null;
  value: string | null;
  headers: Headers;
  timestamp: string;
}

/** Writes records durably (acks from all in-sync replicas). */
export interface Publisher {
  /** All records land or none do (one Kafka transaction); positions are in input order. */
  publish(records: OutgoingRecord[]): Promise<RecordPosition[]>;
  /**
   * Like publish, in two stages of one transaction: `then` receives the
   * positions of `first` (known before the commit) and returns more records.
   * Resolves with the positions of both stages, first stage first.
   */
  publishStaged(first: OutgoingRecord[], then: (positions: RecordPosition[]) => OutgoingRecord[]): Promise<RecordPosition[]>;
}

export interface StateView<T> {
  get(key: string): T | undefined;
  values(): IterableIterator<T>;
  readonly size: number;
  /** true once everything committed before the view started has been applied */
  readonly caughtUp: boolean;
  /** resolves once the view has applied every given position on its topic */
  waitFor(positions: RecordPosition[], timeoutMs: number): Promise<void>;
  onChange(listener: (key: string, value: T | undefined) => void): void;
  /**
   * Resolves once every record committed to the topic before `time` (ms) is
   * applied. Concurrent callers share one sync round trip.
   */
  syncedSince(time: number, timeoutMs: number): Promise<void>;
}

export interface ConsumerHandle {
  stop(): Promise<void>;
}

export interface GroupConsumerOptions {
  groupId: string;
  topics: string[];
  /** at most this many records are handled at once; offsets commit only below the oldest unfinished one */
  maxInFlight: number;
  sessionTimeoutMs?: number;
  handle(record: IncomingRecord, signal: AbortSignal): Promise<void>;
  /** partitions this member lost in a rebalance: in-flight work for them is aborted */
  onRevoked?(topic: string, partition: number): void;
}

export class KafkaUnavailableError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'KafkaUnavailableError';
  }
}
