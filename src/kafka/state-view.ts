import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../logger';
import { recoverFromFatalCrash } from './crash-recovery';
import { KafkaUnavailableError, type Publisher, type RecordPosition, type StateView } from './types';

/** Keys that start with NUL are the view's own sync markers, never state. */
export const SYNC_KEY_PREFIX = '\u0000sync';

interface Waiter {
  positions: RecordPosition[];
  resolve(): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * Materializes a compacted topic in memory, reading committed records only.
 *
 * Each view has its own consumer group and reads every partition from the
 * start. "Caught up" is proven with a marker: the view writes a sync record to
 * every partition after it subscribes and is caught up once it has read them
 * all back, so transaction markers at the log end cannot leave it guessing.
 */
export class KafkaStateView<T> implements StateView<T> {
  private readonly state = new Map<string, T>();
  /** partition → next offset to apply */
  private readonly applied = new Map<number, bigint>();
  private readonly waiters = new Set<Waiter>();
  private readonly listeners: ((key: string, value: T | undefined) => void)[] = [];
  private readonly syncKey = `${SYNC_KEY_PREFIX}:${randomUUID()}`;
  private consumer: Consumer | undefined;
  private synced = false;
  private stopped = false;
  private publisher: Publisher | undefined;
  private partitions: number[] = [];
  /** when the last completed sync barrier was written: everything committed before it is applied */
  private syncedAt = 0;
  private syncInFlight: { startedAt: number; done: Promise<void> } | undefined;

  constructor(
    private readonly kafka: Kafka,
    readonly topic: string,
    private readonly decode: (value: string) => T,
    private readonly logger: Logger,
  ) {}

  get size(): number {
    return this.state.size;
  }

  get caughtUp(): boolean {
    return this.synced;
  }

  get(key: string): T | undefined {
    return this.state.get(key);
  }

  values(): IterableIterator<T> {
    return this.state.values();
  }

  onChange(listener: (key: string, value: T | undefined) => void): void {
    this.listeners.push(listener);
  }

  async start(publisher: Publisher, partitions: number[], timeoutMs: number): Promise<void> {
    await this.consume();
    this.publisher = publisher;
    this.partitions = partitions;
    await this.sync(timeoutMs);
    this.synced = true;
  }

  /**
   * A fresh consumer (own group, from the start of the topic). Re-reading is
   * harmless: applying a record twice gives the same state, and positions only move forward.
   */
  private async consume(): Promise<void> {
    // A short long-poll keeps shutdown quick: disconnect waits for the fetch in flight.
    const consumer = this.kafka.consumer({ groupId: `${this.topic}.view.${randomUUID()}`, readUncommitted: false, sessionTimeout: 30000, maxWaitTimeInMs: 1000 });
    this.consumer = consumer;
    recoverFromFatalCrash(consumer, this.logger, `view of ${this.topic}`, () => this.restart(consumer));
    try {
      await this.run(consumer);
    } catch (err) {
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
  }

  /** Replaces a consumer kafkajs gave up on; tries again every second until it runs or the view stops. */
  private restart(crashed: Consumer): void {
    if (this.stopped || this.consumer !== crashed) return;
    this.consume().catch((err: Error) => {
      this.logger.warn({ topic: this.topic, err: err.message }, 'view consumer did not restart; trying again');
      setTimeout(() => this.restart(this.consumer as Consumer), 1000).unref();
    });
  }

  private async run(consumer: Consumer): Promise<void> {
    await consumer.connect();
    await consumer.subscribe({ topic: this.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) this.apply(batch.partition, m.offset, m.key?.toString() ?? null, m.value?.toString() ?? null);
        this.settleWaiters();
      },
    });
  }

  async syncedSince(time: number, timeoutMs: number): Promise<void> {
    while (this.syncedAt < time) {
      const inFlight = this.syncInFlight;
      if (inFlight && inFlight.startedAt >= time) {
        await inFlight.done;
        return;
      }
      if (inFlight) await inFlight.done.catch(() => undefined);
      else await this.sync(timeoutMs);
    }
  }

  /** Writes a marker to every partition and waits to read them all back. */
  private sync(timeoutMs: number): Promise<void> {
    const publisher = this.publisher;
    if (!publisher) return Promise.reject(new Error('view not started'));
    const startedAt = Date.now();
    const done = (async () => {
      const markers = await publisher.publish(this.partitions.map((partition) => ({ topic: this.topic, key: this.syncKey, value: null, partition })));
      await this.waitFor(markers, timeoutMs);
      if (startedAt > this.syncedAt) this.syncedAt = startedAt;
    })();
    const entry = { startedAt, done };
    this.syncInFlight = entry;
    return done.finally(() => {
      if (this.syncInFlight === entry) this.syncInFlight = undefined;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.waiters) { clearTimeout(w.timer); w.reject(new KafkaUnavailableError('view stopped')); }
    this.waiters.clear();
    await this.consumer?.disconnect().catch(() => undefined);
  }

  waitFor(positions: RecordPosition[], timeoutMs: number): Promise<void> {
    const mine = positions.filter((p) => p.topic === this.topic);
    if (this.reached(mine)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        positions: mine,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          reject(new KafkaUnavailableError(`view of ${this.topic} did not catch up within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  private apply(partition: number, offset: string, key: string | null, value: string | null): void {
    const next = BigInt(offset) + 1n;
    if ((this.applied.get(partition) ?? 0n) < next) this.applied.set(partition, next);
    if (key === null || key.startsWith(SYNC_KEY_PREFIX)) return;
    let decoded: T | undefined;
    if (value !== null) {
      try {
        decoded = this.decode(value);
      } catch (err) {
        this.logger.warn({ topic: this.topic, partition, offset, err: (err as Error).message }, 'skipping undecodable state record');
        return;
      }
    }
    if (decoded === undefined) this.state.delete(key);
    else this.state.set(key, decoded);
    for (const l of this.listeners) l(key, decoded);
  }

  private reached(positions: RecordPosition[]): boolean {
    return positions.every((p) => (this.applied.get(p.partition) ?? 0n) > BigInt(p.offset));
  }

  private settleWaiters(): void {
    for (const w of this.waiters) {
      if (!this.reached(w.positions)) continue;
      clearTimeout(w.timer);
      this.waiters.delete(w);
      w.resolve();
    }
  }
}
