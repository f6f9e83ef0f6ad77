import type { FetchedMessage, FetchedPartition } from './reader-clusters';
import type { IncomingRecord } from './types';

/** answers that say a partition's leader is elsewhere, or not known yet: fresh metadata, then fetch again */
export const STALE_METADATA = new Set([
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'UNKNOWN_TOPIC_OR_PARTITION',
]);

/**
 * How a fetch that failed `failures` times in a row is logged (undefined: not at all). A leader that moved, or a topic
 * made a moment ago, is routine once: metadata is refreshed and the fetch goes again. Every fresh start logged one
 * with its stack at warn, which alerting on warn reads as a fault. Any second failure in a row is told at warn, of
 * whatever kind (a moved leader is often the first sign of a broker going down), and then every tenth.
 */
export function fetchFailureLevel(type: string | undefined, failures: number): 'debug' | 'warn' | undefined {
  if (failures === 1) return type !== undefined && STALE_METADATA.has(type) ? 'debug' : 'warn';
  return failures === 2 || failures % 10 === 0 ? 'warn' : undefined;
}

// kafkajs's own filter of aborted transactions' records (with hookstream's patch, src/kafka/patches): the
// consumer's rule, so an assigned reading hides exactly what a read_committed kafkajs consumer hides.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const filterAbortedMessages = require('kafkajs/src/consumer/filterAbortedMessages') as (batch: {
  messages: FetchedMessage[];
  abortedTransactions: FetchedPartition['abortedTransactions'];
}) => FetchedMessage[];

/**
 * A fetch's committed data records of one partition from `from` (and before `until`), in order: a fetch answers
 * whole record batches, so the first may begin before `from` and the last end after `until`.
 */
export function committedRecords(data: FetchedPartition, from: bigint, until?: bigint): FetchedMessage[] {
  const within = data.messages.filter((m) => {
    const offset = BigInt(m.offset);
    return offset >= from && (until === undefined || offset < until);
  });
  if (within.length === 0) return within;
  return filterAbortedMessages({ messages: within, abortedTransactions: data.abortedTransactions }).filter(
    (m) => !m.isControlRecord,
  );
}

/**
 * Where the partition's next fetch starts: past the answer's last record batch, so markers, aborted records and
 * offsets compaction emptied are passed over, as the Java consumer does (a batch truncated at the end of the
 * answer is not decoded at all). Undefined when the answer held no record.
 */
export function nextOffsetAfter(data: FetchedPartition): bigint | undefined {
  const last = data.messages[data.messages.length - 1];
  if (!last) return undefined;
  return BigInt(last.batchContext.firstOffset) + BigInt(last.batchContext.lastOffsetDelta) + 1n;
}

/** What a record is read from: a fetch's answer here, or kafkajs's consumer (whose header values may be strings). */
type RecordFields = Pick<FetchedMessage, 'offset' | 'key' | 'value' | 'timestamp'> & {
  headers?: Record<string, unknown>;
};

/** A fetched record as the project's handlers and readers take it; header values as strings, those absent left out. */
export function asIncoming(topic: string, partition: number, m: RecordFields): IncomingRecord {
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
