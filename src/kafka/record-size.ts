import type { KindedError } from '../problems/problem-error';
import type { OutgoingRecord } from './types';

/**
 * The most bytes the publisher puts in one send, and so in one record batch of a partition. Kafka refuses a batch
 * over the broker's `message.max.bytes` (1 MiB and 12 bytes by default) with MESSAGE_TOO_LARGE; this leaves room
 * for the batch's own framing.
 */
export const MAX_SEND_BYTES = 1_000_000;

/** A record's share of a send: its key, value and headers, and the framing Kafka adds around a record. */
export function recordBytes(r: OutgoingRecord): number {
  let bytes = 64 + Buffer.byteLength(r.key) + (r.value === null ? 0 : Buffer.byteLength(r.value));
  if (r.headers) for (const [name, value] of Object.entries(r.headers)) bytes += name.length + value.length + 8;
  return bytes;
}

/**
 * A record larger than Kafka takes: refused before anything is sent, since sending it again would fail again.
 * Nothing of the write landed, so a chain of writes it belongs to is not broken by it. Over HTTP it is a 413.
 */
export class RecordTooLargeError extends Error implements KindedError {
  readonly problemKind = 'payload-too-large';
  readonly publicDetail: string;

  constructor(
    readonly topic: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`a record for ${topic} would be ${bytes} bytes, more than the ${limit} a send to Kafka takes`);
    this.name = 'RecordTooLargeError';
    this.publicDetail = `What this would write to Kafka is ${bytes} bytes in one record, more than ${limit}; send less.`;
  }
}

/** The records' size in all, or the error to refuse the write with when one of them is over the limit: one pass. */
export function sizeWithin(records: OutgoingRecord[], limit: number): number | RecordTooLargeError {
  let total = 0;
  for (const r of records) {
    const bytes = recordBytes(r);
    if (bytes > limit) return new RecordTooLargeError(r.topic, bytes, limit);
    total += bytes;
  }
  return total;
}

/** The first record over the limit, as the error to refuse the write with. */
export function tooLarge(records: OutgoingRecord[], limit: number): RecordTooLargeError | undefined {
  const size = sizeWithin(records, limit);
  return typeof size === 'number' ? undefined : size;
}
