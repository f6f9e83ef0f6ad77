import type { Transaction } from 'kafkajs';
import type { PartitionMap } from './partition-map';
import { sendWithin } from './record-sends';
import type { OutgoingRecord, WrittenRecord } from './types';

/** kafkajs's transaction with hookstream's patch (src/kafka/patches): partitions added ahead of the sends */
export type PatchedTransaction = Transaction & {
  addPartitions?(topics: { topic: string; partitions: { partition: number }[] }[]): Promise<void>;
};

/** Where a record will go: an explicit partition, else its key's (the default partitioner's choice). */
export interface RecordTarget {
  topic: string;
  key: string;
  partition?: number;
}

/**
 * Every partition the targets name, added to the transaction in one AddPartitionsToTxn before its first send: the
 * sends that follow need none of their own (kafkajs would add each send's partitions with a request of its own).
 */
export async function addPartitionsAhead(
  tx: PatchedTransaction,
  partitions: PartitionMap,
  targets: RecordTarget[],
): Promise<void> {
  if (!tx.addPartitions) return;
  await partitions.load([...new Set(targets.map((t) => t.topic))]);
  const byTopic = new Map<string, Set<number>>();
  for (const t of targets) {
    const set = byTopic.get(t.topic) ?? new Set<number>();
    set.add(t.partition ?? partitions.partitionFor(t.topic, t.key));
    byTopic.set(t.topic, set);
  }
  const topics = [...byTopic].map(([topic, set]) => ({
    topic,
    partitions: [...set].map((partition) => ({ partition })),
  }));
  await tx.addPartitions(topics);
}

/**
 * One stage of a shared transaction: every caller's records (one group each), in as few sends as keep each within
 * maxBytes (record-sends.ts). Positions come back grouped as the callers gave them.
 */
export async function sendStage(
  tx: Transaction,
  partitions: PartitionMap,
  groups: OutgoingRecord[][],
  maxBytes: number,
  /** the stage's size in all, when the caller knows it */
  bytes?: number,
): Promise<WrittenRecord[][]> {
  const records = groups.flat();
  if (records.length === 0) return groups.map(() => []);
  await partitions.load([...new Set(records.map((r) => r.topic))]);
  const positions = await sendWithin(tx, partitions, records, maxBytes, bytes);
  let i = 0;
  return groups.map((g) => positions.slice(i, (i += g.length)));
}
