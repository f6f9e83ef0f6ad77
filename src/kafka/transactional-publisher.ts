import type { Kafka } from 'kafkajs';
import type { Logger } from '../logger';
import type { KafkaHealth } from './kafka-health';
import type { PartitionMap } from './partition-map';
import { MAX_SEND_BYTES, sizeWithin } from './record-size';
import { addPartitionsAhead, sendStage, type PatchedTransaction } from './transaction-stages';
import { TransactionalProducers } from './transactional-producers';
import {
  KafkaUnavailableError,
  type FencingPublisher,
  type OutgoingRecord,
  type PublishOptions,
  type RecordPosition,
  type WriteChain,
  type WrittenRecord,
} from './types';

interface Pending {
  records: OutgoingRecord[];
  then?: (positions: RecordPosition[]) => OutgoingRecord[];
  resolve(positions: WrittenRecord[]): void;
  reject(err: Error): void;
  settled: boolean;
  /** ms since epoch: the caller has had its answer (503) by then, so the transaction must be over too */
  deadline: number;
  generation?: number;
  chain?: WriteChain;
  thenTo?: PublishOptions['thenTo'];
  /** the first stage's size (recordBytes): a transaction's batch of callers is kept within MAX_SEND_BYTES */
  bytes: number;
}

export interface TransactionalPublisherOptions {
  /** used in turn, one transaction each (see TransactionalProducers); a fencing writer has one */
  transactionalIds: string[];
  timeoutMs: number;
  /** records per transaction; concurrent calls are grouped up to this size */
  maxBatchRecords: number;
  /** bytes per send (record-size.ts); MAX_SEND_BYTES unless a test gives less */
  maxSendBytes?: number;
}

/**
 * Groups concurrent publish() calls into one Kafka transaction each, so many
 * HTTP requests share one round trip, and a caller's records land all or none.
 *
 * A caller waits at most timeoutMs (or what is left of its own deadline);
 * when Kafka is known to be down it is refused at once. A transaction still
 * running when its last caller gave up is abandoned and fenced, so only a
 * commit that raced that deadline can land behind a 503 (never the reverse).
 */
export class TransactionalPublisher implements FencingPublisher {
  private queue: Pending[] = [];
  /** the transaction being written, if any; transactions run one at a time */
  private flushing: Promise<void> | undefined;
  private draining = false;
  private readonly producers: TransactionalProducers;
  private closed = false;
  /** committed transactions and the records and publish calls they carried, for benchmarks and operators */
  readonly stats = { transactions: 0, records: 0, calls: 0 };

  constructor(
    kafka: Kafka,
    private readonly partitions: PartitionMap,
    private readonly health: KafkaHealth,
    private readonly logger: Logger,
    private readonly options: TransactionalPublisherOptions,
  ) {
    this.producers = new TransactionalProducers(kafka, options);
  }

  publish(records: OutgoingRecord[], options: PublishOptions = {}): Promise<WrittenRecord[]> {
    if (records.length === 0) return Promise.resolve([]);
    return this.enqueue(records, undefined, options);
  }

  publishStaged(
    first: OutgoingRecord[],
    then: (positions: RecordPosition[]) => OutgoingRecord[],
    options: PublishOptions = {},
  ): Promise<WrittenRecord[]> {
    return this.enqueue(first, then, options);
  }

  /**
   * Resolves once every transaction started before the call is over, committed
   * or aborted, for good. After a failure that means re-initializing the
   * transactional id: the coordinator then finishes or aborts whatever the
   * failed producer left open, so what a read_committed reader sees next is final.
   */
  async settled(): Promise<number> {
    await this.flushing?.catch(() => undefined);
    await this.producers.initializeAll();
    return this.producers.initializations;
  }

  get generation(): number | undefined {
    return this.producers.ready ? this.producers.initializations : undefined;
  }

  private enqueue(records: OutgoingRecord[], then: Pending['then'], options: PublishOptions): Promise<WrittenRecord[]> {
    const refused = this.closed
      ? 'publisher closed'
      : options.chain?.broken
        ? 'an earlier write of its chain failed'
        : this.health.up
          ? undefined
          : 'Kafka is not reachable';
    if (refused) {
      if (options.chain) options.chain.broken = true;
      return Promise.reject(new KafkaUnavailableError(refused));
    }
    // Refused before it is queued: it could never be sent, and no retry would change that. Nothing was written.
    const bytes = sizeWithin(records, this.maxSendBytes);
    if (typeof bytes !== 'number') return Promise.reject(bytes);
    const timeoutMs = Math.max(1, Math.min(options.timeoutMs ?? this.options.timeoutMs, this.options.timeoutMs));
    return new Promise((resolve, reject) => {
      const pending: Pending = {
        records,
        then,
        resolve,
        reject,
        settled: false,
        deadline: Date.now() + timeoutMs,
        generation: options.generation,
        chain: options.chain,
        thenTo: then ? options.thenTo : undefined,
        bytes,
      };
      const timer = setTimeout(() => {
        settle(pending, new KafkaUnavailableError(`Kafka did not acknowledge within ${timeoutMs} ms`));
      }, timeoutMs);
      pending.resolve = (p) => {
        clearTimeout(timer);
        resolve(p);
      };
      pending.reject = (e) => {
        clearTimeout(timer);
        reject(e);
      };
      this.queue.push(pending);
      void this.drain();
    });
  }

  /**
   * For good: what is still queued is refused, and the transactional id is
   * never initialized again by this publisher. A runner closes a partition's
   * publisher when the partition goes to another runner; re-initializing
   * then, to flush a queued progress event, would fence the new owner and
   * commit an old attempt's event behind its new one.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) settle(p, new KafkaUnavailableError('publisher closed'));
    await this.producers.close();
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.takeBatch();
        if (batch.length === 0) continue;
        this.flushing = this.flush(batch);
        await this.flushing;
      }
    } finally {
      this.flushing = undefined;
      this.draining = false;
    }
  }

  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    let size = 0;
    let bytes = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0];
      if (next.settled) {
        this.queue.shift();
        continue;
      }
      // Within the bytes of one send too: Kafka refuses a partition's batch over its limit, and with it every
      // caller in the transaction (concurrent large requests all failed, though each alone fits).
      const full = size + next.records.length > this.options.maxBatchRecords || bytes + next.bytes > this.maxSendBytes;
      if (batch.length > 0 && full) break;
      batch.push(this.queue.shift() as Pending);
      size += next.records.length;
      bytes += next.bytes;
    }
    return batch;
  }

  private async flush(batch: Pending[]): Promise<void> {
    let positions: WrittenRecord[][];
    try {
      positions = await this.withinDeadline((abandoned) => this.send(batch, abandoned), batch);
    } catch (err) {
      this.producers.reset();
      if (this.closed) {
        for (const p of batch) settle(p, new KafkaUnavailableError('publisher closed', err));
        return;
      }
      this.logger.warn({ err }, 'kafka transaction failed');
      this.health.markDown();
      void this.health.probe();
      for (const p of batch) settle(p, new KafkaUnavailableError('Kafka rejected the write', err));
      return;
    }
    batch.forEach((p, i) => settle(p, positions[i]));
  }

  /**
   * A transaction still retrying when its last caller has had a 503 is abandoned: the producer is replaced, and the
   * new one's initialization aborts it. The abandoned one also goes no step further: kafkajs retries a request to a
   * hung broker on a producer even after its disconnect, so the transaction would go on where it stood when the
   * broker answered again, and commit seconds after its callers were told it had not been done. Only a commit
   * already sent when the deadline passed can land behind a 503 (never the reverse).
   */
  private withinDeadline<T>(work: (abandoned: AbortSignal) => Promise<T>, batch: Pending[]): Promise<T> {
    const abandon = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => {
          const reason = new KafkaUnavailableError('transaction outlived its callers');
          abandon.abort(reason);
          reject(reason);
        },
        Math.max(...batch.map((p) => p.deadline)) - Date.now(),
      );
    });
    return Promise.race([work(abandon.signal), expired]).finally(() => clearTimeout(timer));
  }

  /** One transaction for the whole batch: every caller's first stage, then every second stage, then commit. */
  private async send(all: Pending[], abandoned: AbortSignal): Promise<WrittenRecord[][]> {
    const producer = await this.producers.current();
    abandoned.throwIfAborted();
    // A caller that checked the state under an earlier initialization must check again: someone may have written since.
    for (const p of all) {
      if (p.generation !== undefined && p.generation !== this.producers.initializations) {
        settle(p, new KafkaUnavailableError('the transactional id was initialized again since the caller checked'));
      } else if (p.chain?.broken) {
        settle(p, new KafkaUnavailableError('an earlier write of its chain failed'));
      }
    }
    const batch = all.filter((p) => !p.settled);
    if (batch.length === 0) return all.map(() => []);
    const tx = await producer.transaction();
    try {
      abandoned.throwIfAborted();
      await this.addAhead(tx, batch);
      abandoned.throwIfAborted();
      // The first stage's size is known from the queue (takeBatch kept it within a send); the second's is not.
      const firstBytes = batch.reduce((sum, p) => sum + p.bytes, 0);
      const first = await sendStage(
        tx,
        this.partitions,
        batch.map((p) => p.records),
        this.maxSendBytes,
        firstBytes,
      );
      abandoned.throwIfAborted();
      const second = await sendStage(
        tx,
        this.partitions,
        batch.map((p, i) => p.then?.(first[i]) ?? []),
        this.maxSendBytes,
      );
      abandoned.throwIfAborted();
      await tx.commit();
      this.producers.advance(producer);
      this.stats.transactions += 1;
      this.stats.calls += batch.length;
      this.stats.records += first.flat().length + second.flat().length;
      const positions = new Map(batch.map((p, i) => [p, [...first[i], ...second[i]]]));
      return all.map((p) => positions.get(p) ?? []);
    } catch (err) {
      await tx.abort().catch(() => undefined);
      throw err;
    }
  }

  /**
   * When callers said where their second stage will write, every partition of both stages is added to the
   * transaction in one AddPartitionsToTxn, before the first send: the second send then needs none of its own.
   */
  private async addAhead(tx: PatchedTransaction, batch: Pending[]): Promise<void> {
    if (!batch.some((p) => p.thenTo?.length)) return;
    await addPartitionsAhead(
      tx,
      this.partitions,
      batch.flatMap((p) => [...p.records, ...(p.thenTo ?? [])]),
    );
  }

  private get maxSendBytes(): number {
    return this.options.maxSendBytes ?? MAX_SEND_BYTES;
  }
}

function settle(p: Pending, outcome: WrittenRecord[] | Error): void {
  if (p.settled) return;
  p.settled = true;
  // Synchronously, before any later write of the chain can be sent: a gap in a task's events is never committed.
  if (outcome instanceof Error && p.chain) p.chain.broken = true;
  if (outcome instanceof Error) p.reject(outcome);
  else p.resolve(outcome);
}
