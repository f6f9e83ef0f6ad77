import type { KindedError } from '../problems/problem-error';
import type { Topics } from './topics';
import type { MembershipLease } from './membership-lease';
import type { GroupMemberRecord } from './stale-member';
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
  /**
   * ms since epoch, some time after the fetch that brought the record was
   * answered, so the record (and everything committed before it) was
   * committed by then. A barrier for "everything committed before this
   * event", which the record's own timestamp (set before it was even
   * appended) is not. Records of one fetch share it.
   */
  receivedAt?: number;
}

/**
 * A record this process wrote and Kafka acknowledged (its transaction committed), with where it landed: what a
 * writer's own view applies without reading it back (StateView.applyWritten).
 */
export interface WrittenRecord extends RecordPosition {
  key: string;
  value: string | null;
}

export interface PublishOptions {
  /** answer within this long (at most the publisher's own timeout); the caller's remaining deadline */
  timeoutMs?: number;
  /**
   * Write only under this initialization of the transactional id (see
   * FencingPublisher.settled): a caller that checked the state after it can
   * be sure nobody else wrote in between.
   */
  generation?: number;
  /**
   * Writes that must land in the order they were made, with no gap: once one
   * of them fails (or its caller gave up on it), the later ones are refused
   * before they are sent. A caller can then make them without awaiting each.
   */
  chain?: WriteChain;
  /**
   * publishStaged: where the second stage will write (topic and key), when the caller knows before the first stage's
   * positions. Those partitions join the transaction with the first stage's: one round trip instead of two.
   */
  thenTo?: { topic: string; key: string }[];
  /**
   * A request's creation under its Idempotency-Key (src/idempotency): the first write made with it carries the key's
   * answer in the same transaction. Handed down from the route, as a span is.
   */
  idempotency?: KeyedCreation;
}

/** Opaque outside src/idempotency, which makes them. */
export interface KeyedCreation {
  readonly keyedCreation: true;
}

/** See PublishOptions.chain. Marked broken by the publisher; a new chain starts whole. */
export interface WriteChain {
  broken: boolean;
}

/** Writes records durably (acks from all in-sync replicas). */
export interface Publisher {
  /** All records land or none do (one Kafka transaction); positions are in input order. */
  publish(records: OutgoingRecord[], options?: PublishOptions): Promise<WrittenRecord[]>;
  /**
   * Like publish, in two stages of one transaction: `then` receives the
   * positions of `first` (known before the commit) and returns more records.
   * Resolves with the positions of both stages, first stage first.
   */
  publishStaged(
    first: OutgoingRecord[],
    then: (positions: RecordPosition[]) => OutgoingRecord[],
    options?: PublishOptions,
  ): Promise<WrittenRecord[]>;
}

/**
 * A publisher that owns a transactional id: creating it fences every earlier
 * writer with that id. The task runner has one per input partition, so a
 * runner that lost its partition (a zombie) can no longer write that
 * partition's tasks' events.
 */
export interface FencingPublisher extends Publisher {
  /**
   * Every transaction begun before the call is committed or aborted for good,
   * and the id is fenced. Resolves with the current initialization's number.
   */
  settled(): Promise<number>;
  /** the current initialization's number, or undefined while none is in force (after a failure) */
  readonly generation: number | undefined;
  close(): Promise<void>;
}

export interface StateView<T> {
  get(key: string): T | undefined;
  values(): IterableIterator<T>;
  /** key and value: for a writer that tombstones keys it finds by their values */
  entries(): IterableIterator<[string, T]>;
  readonly size: number;
  /** true once everything committed before the view started has been applied */
  readonly caughtUp: boolean;
  /** resolves once the view's reading has passed every given position on its topic (and so all before them) */
  waitFor(positions: RecordPosition[], timeoutMs: number): Promise<void>;
  /**
   * Applies records this process wrote (acknowledged, committed) on the view's topic at once, before its reading
   * reaches them: read-your-writes without a read-back. A key's value never goes back to an older offset. False when
   * it applied nothing because its reading trails this process's writes by seconds and the records change keys it
   * shows: the writer must wait (waitFor). Creations are never waited for (see KafkaStateView).
   */
  applyWritten(records: WrittenRecord[]): boolean;
  onChange(listener: (key: string, value: T | undefined) => void): void;
  /** when the last completed sync began (ms since epoch): syncedSince(t) for any t up to it needs no round trip */
  readonly syncedAt: number;
  /**
   * Resolves once every transaction that had written to the topic before
   * `time` (ms) is decided and its committed records are applied, including a
   * transaction whose marker reached another topic first. Concurrent callers
   * share one sync round trip.
   */
  syncedSince(time: number, timeoutMs: number): Promise<void>;
}

/**
 * A compacted topic read as a view, with the one decoder of its records. The module that writes the format declares
 * it; a process opens one view per topic, and asking for that topic with another spec is an error, so no caller is
 * handed a view decoded as another type.
 */
export interface ViewSpec<T> {
  readonly topic: keyof Topics;
  decode(value: string): T;
}

/** Where stores open their views: the process's Kafka gateway (a fake in the unit tier). */
export interface ViewSource {
  view<T>(spec: ViewSpec<T>): Promise<StateView<T>>;
}

export interface ConsumerHandle {
  stop(): Promise<void>;
}

/** Records of one partition that a group member has not finished: not yet fetched, waiting or running. */
export interface PartitionLag {
  topic: string;
  partition: number;
  lag: number;
}

export interface GroupConsumerHandle extends ConsumerHandle {
  /** per partition this member holds, as of its latest fetch from it (no request to Kafka) */
  lag(): PartitionLag[];
}

/**
 * Keeps a partition's committed offset at or below an offset after the record that made it has finished: the
 * record's work goes on outside its handler (a callback lane reading its backlog again from Kafka), and a crash must
 * hand it to the next owner. Released, or handed back with the partition, it holds nothing.
 */
export interface CommitHold {
  /** raises the hold (never lowers it) */
  moveTo(offset: bigint): void;
  release(): void;
}

export interface GroupConsumerOptions {
  groupId: string;
  topics: string[];
  /** at most this many records are handled at once; offsets commit only below the oldest unfinished one */
  maxInFlight: number;
  sessionTimeoutMs?: number;
  /** told of the member's joins, heartbeats and rebalances: whether it may still act for its partitions */
  membership?: MembershipLease;
  /**
   * On stop, how long records under way may go on to finish (and be committed) before the rest are handed back;
   * 0 (the default) hands them back at once. Nothing new is started meanwhile.
   */
  stopGraceMs?: number;
  /** `holdCommit` keeps the partition's commit at or below an offset beyond this record's end (CommitHold) */
  handle(record: IncomingRecord, signal: AbortSignal, holdCommit: (offset: bigint) => CommitHold): Promise<void>;
  /** partitions this member lost in a rebalance: in-flight work for them is aborted */
  onRevoked?(topic: string, partition: number): void;
  /**
   * A partition assigned to this member, told once its committed offset is known and before any of its records is
   * handled (a partition with nothing new may never bring one): `signal` is the hand-back signal its records get too,
   * `resumeAt` the offset they resume from. Not told for a partition the group has never committed.
   */
  onAssigned?(topic: string, partition: number, signal: AbortSignal, resumeAt: bigint): void;
  /** this process's members of earlier runs; the gateway gives its own (KafkaGatewayOptions.memberRecord) */
  memberRecord?: GroupMemberRecord;
}

/** What a PartitionReader hands over, in offset order; committed records only (read_committed). */
export interface PartitionReadOptions {
  topic: string;
  partition: number;
  /** the first offset to read */
  fromOffset: string;
  /**
   * Called once per record, in order. The next record is not read before the
   * returned promise settles (backpressure: a slow receiver holds at most one
   * fetch in memory).
   */
  onRecord(record: IncomingRecord): Promise<void> | void;
  /**
   * The reading's end, exclusive: nothing at or after it is handed over, and once every offset below it was read
   * the reading fetches no more (a page read to the end known at its request). Without it, it reads until stopped.
   */
  until?: string;
  /**
   * The reading ended for good and reads nothing more: its receiver threw, Kafka answered an error it calls not
   * retriable, the position is past the partition's end, or `giveUpAfter` fetches in a row failed. Without
   * `giveUpAfter`, failures that may pass (a broker restart, a moved leader) are tried again for as long as it runs.
   */
  onError?(err: Error): void;
  giveUpAfter?: number;
  /**
   * Records below the partition's log start (deleted by retention, or by a records deletion) are a gap the receiver
   * must know of: opening at such a position rejects with RecordsDeletedError, and a reading that falls below the
   * log start ends with it (onError). Without it, the reading goes on from the first record there is.
   */
  refuseDeleted?: boolean;
}

export interface PartitionReading {
  /**
   * Resolves once every offset below `offset` has been read (records handed to
   * onRecord, transaction markers and aborted records passed over).
   */
  reached(offset: string, timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Reads one partition from a known offset, assigned, with no consumer group:
 * any process can serve any reader, and a reading outlives a broker restart
 * (it fetches again from where it was).
 */
export interface PartitionReader {
  /** Resolves once the reader is positioned at fromOffset and fetching; KafkaUnavailableError after timeoutMs. */
  open(options: PartitionReadOptions, timeoutMs: number): Promise<PartitionReading>;
  /** The partition's end: the offset the next record written to it will get. */
  endOffset(topic: string, partition: number, timeoutMs: number): Promise<string>;
  /**
   * The partition's log end (its high watermark): past every record written to it so far, those of transactions
   * still open included. A committed reader gets there once every one of them is decided; endOffset is where it can
   * get now.
   */
  logEnd(topic: string, partition: number, timeoutMs: number): Promise<string>;
  /** The partition's log start: the first offset it still holds (retention deleted the records below it). */
  startOffset(topic: string, partition: number, timeoutMs: number): Promise<string>;
}

/** The records from a reading's position up to `firstOffset` (the log start) are no longer in the log. */
export class RecordsDeletedError extends Error {
  constructor(
    readonly topic: string,
    readonly partition: number,
    /** where the partition's log starts now: the first record there is */
    readonly firstOffset: bigint,
  ) {
    super(`the records of ${topic}/${partition} before offset ${firstOffset} were deleted`);
    this.name = 'RecordsDeletedError';
  }
}

/** Kafka did not answer in time or is down; any caller may answer it as the `kafka-unavailable` problem. */
export class KafkaUnavailableError extends Error implements KindedError {
  readonly problemKind = 'kafka-unavailable';

  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'KafkaUnavailableError';
  }
}
