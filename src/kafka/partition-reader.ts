import { randomUUID } from 'node:crypto';
import type { Admin, Batch, Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../logger';
import { recoverFromFatalCrash } from './crash-recovery';
import {
  KafkaUnavailableError,
  type IncomingRecord,
  type PartitionReader,
  type PartitionReadOptions,
  type PartitionReading,
} from './types';
import { withKafkaTimeout } from './kafka-timeout';

/** kafkajs heartbeats only between handler calls: a handler held by a slow receiver heartbeats itself this often. */
const HEARTBEAT_WHILE_HELD_MS = 3000;
/** one fetch per reader: what a slow receiver can make this process hold for it */
const MAX_FETCH_BYTES = 256 * 1024;

interface Waiter {
  target: bigint;
  resolve(): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * One reading of one partition. kafkajs has no `assign`, so the reader is the
 * only member of a consumer group of its own (a fresh random id, nothing ever
 * committed), is given every partition, pauses all but its own and seeks that
 * one to the wanted offset. Records already handed over are never handed over
 * again: a rebalance or a replaced consumer that re-reads them is filtered by
 * position.
 */
class Reading implements PartitionReading {
  /** the next offset to hand over: everything below it was handed over or was a marker */
  private position: bigint;
  private consumer: Consumer | undefined;
  private stopped = false;
  private readonly waiters = new Set<Waiter>();

  constructor(
    private readonly kafka: Kafka,
    private readonly options: PartitionReadOptions,
    private readonly logger: Logger,
    private readonly onStopped: (r: Reading) => void,
  ) {
    this.position = BigInt(options.fromOffset);
  }

  /** Resolves once the consumer has joined its group and is seeked; rejects after timeoutMs. */
  async start(timeoutMs: number): Promise<void> {
    try {
      // kafkajs's run() also resolves when joining failed (it reports a crash): joining is what counts.
      let joined: () => void = () => undefined;
      const join = new Promise<void>((resolve) => {
        joined = resolve;
      });
      const what = `reader of ${this.options.topic}/${this.options.partition}`;
      await withKafkaTimeout(
        this.consume(joined).then(() => join),
        timeoutMs,
        what,
      );
    } catch (err) {
      await this.stop();
      if (err instanceof KafkaUnavailableError) throw err;
      throw new KafkaUnavailableError('the partition reader did not start', err);
    }
  }

  reached(offset: string, timeoutMs: number): Promise<void> {
    const target = BigInt(offset);
    if (this.position >= target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        target,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          reject(new KafkaUnavailableError(`the reader did not reach offset ${offset} within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new KafkaUnavailableError('reader stopped'));
    }
    this.waiters.clear();
    this.onStopped(this);
    await this.consumer?.disconnect().catch(() => undefined);
  }

  private async consume(joined: () => void = () => undefined): Promise<void> {
    const { topic, partition } = this.options;
    const consumer = this.kafka.consumer({
      groupId: `${topic}.reader.${randomUUID()}`,
      readUncommitted: false,
      sessionTimeout: 30000,
      maxWaitTimeInMs: 1000,
      maxBytesPerPartition: MAX_FETCH_BYTES,
      maxBytes: MAX_FETCH_BYTES,
      retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: 5, restartOnFailure: async () => false },
    });
    this.consumer = consumer;
    recoverFromFatalCrash(consumer, this.logger, `reader of ${topic}/${partition}`, () => this.restart(consumer));
    // Only this partition is read; kafkajs assigns the lone member all of them.
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      const others = (payload.memberAssignment[topic] ?? []).filter((p) => p !== partition);
      if (others.length > 0) consumer.pause([{ topic, partitions: others }]);
      joined();
    });
    // Batches of only markers or aborted records never reach eachBatch, but do move the position.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      const current = this.consumer === consumer && !this.stopped;
      if (current && payload.topic === topic && payload.partition === partition && payload.firstOffset !== null) {
        this.advance(BigInt(payload.lastOffset) + 1n);
      }
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: false });
      await consumer.run({
        autoCommit: false,
        eachBatch: ({ batch, heartbeat }) => this.handle(consumer, batch, heartbeat),
      });
      // A fetch already in flight for the partition is dropped by kafkajs once a seek is pending.
      consumer.seek({ topic, partition, offset: this.position.toString() });
    } catch (err) {
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
    if (this.stopped) await consumer.disconnect().catch(() => undefined);
  }

  private async handle(consumer: Consumer, batch: Batch, heartbeat: () => Promise<void>): Promise<void> {
    if (batch.partition !== this.options.partition) return;
    for (const m of batch.messages) {
      if (this.stopped || this.consumer !== consumer) return;
      const offset = BigInt(m.offset);
      if (offset < this.position) continue;
      const record: IncomingRecord = {
        topic: batch.topic,
        partition: batch.partition,
        offset: m.offset,
        key: m.key?.toString() ?? null,
        value: m.value?.toString() ?? null,
        timestamp: m.timestamp,
        headers: Object.fromEntries(Object.entries(m.headers ?? {}).map(([k, v]) => [k, String(v)])),
      };
      await this.held(this.options.onRecord(record), heartbeat);
      this.advance(offset + 1n);
    }
  }

  /** Waits for the receiver without losing the group: a session without heartbeats would be ended by the broker. */
  private async held(receiving: Promise<void> | void, heartbeat: () => Promise<void>): Promise<void> {
    if (!(receiving instanceof Promise)) return;
    let done = false;
    const finished = receiving.finally(() => {
      done = true;
    });
    while (!done) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        finished,
        new Promise((r) => {
          timer = setTimeout(r, HEARTBEAT_WHILE_HELD_MS);
        }),
      ]);
      clearTimeout(timer);
      if (!done && !this.stopped) await heartbeat().catch(() => undefined);
    }
    await finished;
  }

  private advance(next: bigint): void {
    if (next <= this.position) return;
    this.position = next;
    for (const w of this.waiters) {
      if (w.target > next) continue;
      clearTimeout(w.timer);
      this.waiters.delete(w);
      w.resolve();
    }
  }

  /** A consumer kafkajs gave up on is replaced by a fresh one from the current position. */
  private restart(crashed: Consumer): void {
    if (this.stopped || this.consumer !== crashed) return;
    this.consume().catch((err: unknown) => {
      if (this.stopped) return;
      const { topic, partition } = this.options;
      this.logger.warn({ topic, partition, err }, 'partition reader did not restart');
      this.options.onError?.(err instanceof Error ? err : new Error(String(err)));
      void this.stop();
    });
  }
}

/** PartitionReader on kafkajs; tracks its readings so the gateway can stop them on shutdown. */
export class KafkaPartitionReader implements PartitionReader {
  private readonly readings = new Set<Reading>();

  constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly logger: Logger,
  ) {}

  async open(options: PartitionReadOptions, timeoutMs: number): Promise<PartitionReading> {
    const reading = new Reading(this.kafka, options, this.logger, (r) => this.readings.delete(r));
    this.readings.add(reading);
    await reading.start(timeoutMs);
    return reading;
  }

  async endOffset(topic: string, partition: number, timeoutMs: number): Promise<string> {
    const offsets = await withKafkaTimeout(this.admin.fetchTopicOffsets(topic), timeoutMs, `end offsets of ${topic}`);
    const found = offsets.find((o) => o.partition === partition);
    if (!found) throw new Error(`${topic} has no partition ${partition}`);
    return found.high;
  }

  /** readings not yet stopped, for operators and tests */
  get openReadings(): number {
    return this.readings.size;
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.readings].map((r) => r.stop()));
  }
}
