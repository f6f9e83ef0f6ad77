import type { Kafka, Message, Producer, Transaction } from 'kafkajs';
import type { Logger } from '../logger';
import type { KafkaHealth } from './kafka-health';
import type { PartitionMap } from './partition-map';
import { KafkaUnavailableError, type OutgoingRecord, type Publisher, type RecordPosition } from './types';

interface Pending {
  records: OutgoingRecord[];
  then?: (positions: RecordPosition[]) => OutgoingRecord[];
  resolve(positions: RecordPosition[]): void;
  reject(err: Error): void;
  settled: boolean;
}

export interface TransactionalPublisherOptions {
  transactionalId: string;
  timeoutMs: number;
  /** records per transaction; concurrent calls are grouped up to this size */
  maxBatchRecords: number;
}

/**
 * Groups concurrent publish() calls into one Kafka transaction each, so many
 * HTTP requests share one round trip, and a caller's records land all or none.
 *
 * A caller waits at most timeoutMs; when Kafka is known to be down it is
 * refused at once. A transaction that outlives its caller's timeout may still
 * commit: the caller saw 503 for a write that happened (never the reverse).
 */
export class TransactionalPublisher implements Publisher {
  private queue: Pending[] = [];
  private flushing = false;
  private producer: Producer | undefined;
  /** committed transactions and the records and publish calls they carried, for benchmarks and operators */
  readonly stats = { transactions: 0, records: 0, calls: 0 };

  constructor(
    private readonly kafka: Kafka,
    private readonly partitions: PartitionMap,
    private readonly health: KafkaHealth,
    private readonly logger: Logger,
    private readonly options: TransactionalPublisherOptions,
  ) {}

  publish(records: OutgoingRecord[]): Promise<RecordPosition[]> {
    if (records.length === 0) return Promise.resolve([]);
    return this.enqueue(records);
  }

  publishStaged(first: OutgoingRecord[], then: (positions: RecordPosition[]) => OutgoingRecord[]): Promise<RecordPosition[]> {
    return this.enqueue(first, then);
  }

  private enqueue(records: OutgoingRecord[], then?: Pending['then']): Promise<RecordPosition[]> {
    if (!this.health.up) return Promise.reject(new KafkaUnavailableError('Kafka is not reachable'));
    return new Promise((resolve, reject) => {
      const pending: Pending = { records, then, resolve, reject, settled: false };
      const timer = setTimeout(() => settle(pending, new KafkaUnavailableError(`Kafka did not acknowledge within ${this.options.timeoutMs} ms`)), this.options.timeoutMs);
      pending.resolve = (p) => { clearTimeout(timer); resolve(p); };
      pending.reject = (e) => { clearTimeout(timer); reject(e); };
      this.queue.push(pending);
      void this.drain();
    });
  }

  async close(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    await producer?.disconnect().catch(() => undefined);
  }

  private async drain(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.takeBatch();
        if (batch.length > 0) await this.flush(batch);
      }
    } finally {
      this.flushing = false;
    }
  }

  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    let size = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0];
      if (next.settled) { this.queue.shift(); continue; }
      if (batch.length > 0 && size + next.records.length > this.options.maxBatchRecords) break;
      batch.push(this.queue.shift() as Pending);
      size += next.records.length;
    }
    return batch;
  }

  private async flush(batch: Pending[]): Promise<void> {
    let positions: RecordPosition[][];
    try {
      positions = await this.send(batch);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'kafka transaction failed');
      this.health.markDown();
      void this.health.probe();
      for (const p of batch) settle(p, new KafkaUnavailableError('Kafka rejected the write', err));
      return;
    }
    batch.forEach((p, i) => settle(p, positions[i]));
  }

  /** One transaction for the whole batch: every caller's first stage, then every second stage, then commit. */
  private async send(batch: Pending[]): Promise<RecordPosition[][]> {
    const producer = await this.connectedProducer();
    const tx = await producer.transaction();
    try {
      const first = await this.sendStage(tx, batch.map((p) => p.records));
      const second = await this.sendStage(tx, batch.map((p, i) => p.then?.(first[i]) ?? []));
      await tx.commit();
      this.stats.transactions += 1;
      this.stats.calls += batch.length;
      this.stats.records += first.flat().length + second.flat().length;
      return first.map((positions, i) => [...positions, ...second[i]]);
    } catch (err) {
      await tx.abort().catch(() => undefined);
      this.reset();
      throw err;
    }
  }

  private async sendStage(tx: Transaction, groups: OutgoingRecord[][]): Promise<RecordPosition[][]> {
    const records = groups.flat();
    if (records.length === 0) return groups.map(() => []);
    await this.partitions.load([...new Set(records.map((r) => r.topic))]);
    const assigned = records.map((r) => ({ ...r, partition: r.partition ?? this.partitions.partitionFor(r.topic, r.key) }));
    const byTopic = new Map<string, Message[]>();
    for (const r of assigned) {
      const list = byTopic.get(r.topic) ?? [];
      list.push({ key: r.key, value: r.value, headers: r.headers, partition: r.partition });
      byTopic.set(r.topic, list);
    }
    const metadata = await tx.sendBatch({ topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
    const positions = positionsOf(assigned, metadata);
    let i = 0;
    return groups.map((g) => positions.slice(i, (i += g.length)));
  }

  private async connectedProducer(): Promise<Producer> {
    if (this.producer) return this.producer;
    const producer = this.kafka.producer({
      transactionalId: this.options.transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      // A writer that dies mid-transaction holds every read_committed reader of those partitions
      // (all the views) until the coordinator aborts it after this long. Ours last milliseconds and a
      // caller gives up after timeoutMs, so keep it short instead of kafkajs's 60 s.
      transactionTimeout: Math.max(10000, 2 * this.options.timeoutMs),
    });
    await producer.connect();
    this.producer = producer;
    return producer;
  }

  /**
   * After any failed transaction the producer is replaced, whatever its abort
   * did: kafkajs's transaction state can be left unusable, and a fresh
   * producer with the same transactional id fences the old one.
   */
  private reset(): void {
    const old = this.producer;
    this.producer = undefined;
    void old?.disconnect().catch(() => undefined);
  }
}

function settle(p: Pending, outcome: RecordPosition[] | Error): void {
  if (p.settled) return;
  p.settled = true;
  if (outcome instanceof Error) p.reject(outcome);
  else p.resolve(outcome);
}

/** Within one partition, records of one send get consecutive offsets from its base offset, in order. */
function positionsOf(
  records: (OutgoingRecord & { partition: number })[],
  metadata: { topicName: string; partition: number; baseOffset?: string }[],
): RecordPosition[] {
  const next = new Map<string, bigint>();
  for (const m of metadata) next.set(`${m.topicName}:${m.partition}`, BigInt(m.baseOffset ?? '0'));
  return records.map((r) => {
    const k = `${r.topic}:${r.partition}`;
    const offset = next.get(k) ?? 0n;
    next.set(k, offset + 1n);
    return { topic: r.topic, partition: r.partition, offset: offset.toString() };
  });
}
