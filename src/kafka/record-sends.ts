import type { Message, Transaction } from 'kafkajs';
import type { PartitionMap } from './partition-map';
import { recordBytes } from './record-size';
import type { OutgoingRecord, WrittenRecord } from './types';

/**
 * Records sent in a transaction in as few sends as keep each within `maxBytes`: one for all but a large write (a
 * bulk of large resources), whose sends then follow one another, in order. Kafka takes a partition's records of one
 * send as one batch, and refuses a batch over its limit (record-size.ts). Positions are in input order.
 */
export async function sendWithin(
  tx: Transaction,
  partitions: PartitionMap,
  records: OutgoingRecord[],
  maxBytes: number,
  /** the records' size in all, when the caller knows it: within maxBytes, they go in one send without measuring */
  knownBytes?: number,
): Promise<WrittenRecord[]> {
  if (knownBytes !== undefined && knownBytes <= maxBytes) return sendOnce(tx, partitions, records);
  const positions: WrittenRecord[] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i <= records.length; i += 1) {
    const size = i < records.length ? recordBytes(records[i]) : 0;
    if (i === records.length || (i > start && bytes + size > maxBytes)) {
      positions.push(...(await sendOnce(tx, partitions, records.slice(start, i))));
      start = i;
      bytes = 0;
    }
    bytes += size;
  }
  return positions;
}

async function sendOnce(
  tx: Transaction,
  partitions: PartitionMap,
  records: OutgoingRecord[],
): Promise<WrittenRecord[]> {
  // One message object per record, no copy of the record: a batch carries a few hundred on the api's one thread.
  const byTopic = new Map<string, Message[]>();
  const messages: Message[] = new Array(records.length);
  for (let i = 0; i < records.length; i += 1) {
    const r = records[i];
    const partition = r.partition ?? partitions.partitionFor(r.topic, r.key);
    const message: Message = { key: r.key, value: r.value, headers: r.headers, partition };
    messages[i] = message;
    const list = byTopic.get(r.topic);
    if (list) list.push(message);
    else byTopic.set(r.topic, [message]);
  }
  const metadata = await tx.sendBatch({
    topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
  });
  return positionsOf(records, messages, metadata);
}

/** Within one partition, records of one send get consecutive offsets from its base offset, in order. */
function positionsOf(
  records: OutgoingRecord[],
  messages: Message[],
  metadata: { topicName: string; partition: number; baseOffset?: string }[],
): WrittenRecord[] {
  const next = new Map<string, bigint>();
  for (const m of metadata) next.set(`${m.topicName}:${m.partition}`, BigInt(m.baseOffset ?? '0'));
  return records.map((r, i) => {
    const partition = messages[i].partition as number;
    const k = `${r.topic}:${partition}`;
    const offset = next.get(k) ?? 0n;
    next.set(k, offset + 1n);
    return { topic: r.topic, partition, offset: offset.toString(), key: r.key, value: r.value };
  });
}
