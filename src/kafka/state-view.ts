import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../logger';
import { recoverFromFatalCrash } from './crash-recovery';
import { KafkaUnavailableError, type RecordPosition, type StateView } from './types';
import { withKafkaTimeout } from './kafka-timeout';

interface Waiter {
  /** partition → offset the view must have consumed past */
  targets: Map<number, bigint>;
  resolve(): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** partition → the high watermark of the topic: the log's end, open transactions' records included */
export type LatestOffsets = () => Promise<Map<number, bigint>>;

/**
 * Materializes a compacted topic in memory, reading committed records only.
 *
 * Each view has its own consumer group and reads every partition from the
 * start. Being "synced" is proven without writing anything: the view asks the
 * broker for the high watermark of every partition and waits until its
 * read_committed consumer has fetched past it, which it can only do once every
 * transaction that had written below it is decided (see high-watermarks.ts for
 * why the last stable offset is not enough). The position counts transaction
 * markers and aborted records too (kafkajs reports batches that hold only
 * those), so a log that ends in a marker is reached.
 */
export class KafkaStateView<T> implements StateView<T> {
  private readonly state = new Map<string, T>();
  /** partition → next offset this view's consumer will fetch */
  private readonly position = new Map<number, bigint>();
  private readonly waiters = new Set<Waiter>();
  private readonly listeners: ((key: string, value: T | undefined) => void)[] = [];
  private consumer: Consumer | undefined;
  private synced = false;
  private stopped = false;
  /** when the last completed sync started: everything committed before it is applied */
  private lastSyncAt = 0;
  private syncInFlight: { startedAt: number; done: Promise<void> } | undefined;

  constructor(
    private readonly kafka: Kafka,
    readonly topic: string,
    private readonly decode: (value: string) => T,
    private readonly latestOffsets: LatestOffsets,
    private readonly logger: Logger,
  ) {}

  get size(): number {
    return this.state.size;
  }

  get caughtUp(): boolean {
    return this.synced;
  }

  get syncedAt(): number {
    return this.lastSyncAt;
  }

  get(key: string): T | undefined {
    return this.state.get(key);
  }

  values(): IterableIterator<T> {
    return this.state.values();
  }

  entries(): IterableIterator<[string, T]> {
    return this.state.entries();
  }

  onChange(listener: (key: string, value: T | undefined) => void): void {
    this.listeners.push(listener);
  }

  async start(timeoutMs: number): Promise<void> {
    await this.consume();
    await this.syncedSince(Date.now(), timeoutMs);
    this.synced = true;
  }

  /**
   * A fresh consumer in a group of its own, from where this view has read to
   * (the start, the first time). It may fetch from the start before the seek
   * takes effect: records below the position were applied already and are
   * skipped, or the view would go back to older values until it caught up.
   *
   * Every crash gets a fresh group too, instead of kafkajs's own restart:
   * that rejoins the old group as a new member, and after a broker restart
   * the coordinator then waits for the old member's session to expire (30 s)
   * before the view reads again. A new group has no one to wait for.
   */
  private async consume(): Promise<void> {
    // A short long-poll keeps shutdown quick: disconnect waits for the fetch in flight.
    const consumer = this.kafka.consumer({
      groupId: `${this.topic}.view.${randomUUID()}`,
      readUncommitted: false,
      sessionTimeout: 30000,
      maxWaitTimeInMs: 1000,
      retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: 5, restartOnFailure: async () => false },
    });
    this.consumer = consumer;
    recoverFromFatalCrash(consumer, this.logger, `view of ${this.topic}`, () => this.restart(consumer));
    // Batches of only markers or aborted records never reach eachBatch, but do move the position.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      // firstOffset is null when kafkajs skipped records below the fetched offset (compaction): nothing was seen.
      if (payload.topic === this.topic && payload.firstOffset !== null)
        this.advance(payload.partition, payload.lastOffset);
    });
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
    this.consume().catch((err: unknown) => {
      this.logger.warn({ topic: this.topic, err }, 'view consumer did not restart; trying again');
      setTimeout(() => this.restart(this.consumer as Consumer), 1000).unref();
    });
  }

  private async run(consumer: Consumer): Promise<void> {
    await consumer.connect();
    await consumer.subscribe({ topic: this.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const from = this.position.get(batch.partition) ?? 0n;
        for (const m of batch.messages) {
          if (BigInt(m.offset) >= from) this.apply(m.key?.toString() ?? null, m.value?.toString() ?? null);
        }
        this.advance(batch.partition, batch.lastOffset());
      },
    });
    for (const [partition, offset] of this.position)
      consumer.seek({ topic: this.topic, partition, offset: offset.toString() });
  }

  /**
   * Resolves once every transaction that had written to the topic before
   * `time` (ms) is decided and its committed records are applied. Concurrent
   * callers share one ListOffsets round trip.
   */
  async syncedSince(time: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.lastSyncAt < time) {
      const inFlight = this.syncInFlight;
      if (inFlight && inFlight.startedAt >= time) {
        await inFlight.done;
        return;
      }
      if (inFlight) await inFlight.done.catch(() => undefined);
      else await this.sync(Math.max(1, deadline - Date.now()));
    }
  }

  private sync(timeoutMs: number): Promise<void> {
    const startedAt = Date.now();
    const done = (async () => {
      const latest = await this.latestWithin(startedAt + timeoutMs);
      await this.waitForTargets(latest, Math.max(1, startedAt + timeoutMs - Date.now()));
      if (startedAt > this.lastSyncAt) this.lastSyncAt = startedAt;
    })();
    const entry = { startedAt, done };
    this.syncInFlight = entry;
    return done.finally(() => {
      if (this.syncInFlight === entry) this.syncInFlight = undefined;
    });
  }

  /**
   * The partitions' end offsets, asked again on failure until the deadline: a
   * broker answers NOT_LEADER for a moment after a topic is created or a
   * leader moves, and kafkajs's admin gives up on that at once.
   */
  private async latestWithin(deadline: number): Promise<Map<number, bigint>> {
    for (let failures = 1; ; failures += 1) {
      try {
        return await withKafkaTimeout(
          this.latestOffsets(),
          Math.max(1, deadline - Date.now()),
          `offsets of ${this.topic}`,
        );
      } catch (err) {
        const delay = Math.min(500, 25 * 2 ** failures);
        if (this.stopped || Date.now() + delay >= deadline) throw err;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new KafkaUnavailableError('view stopped'));
    }
    this.waiters.clear();
    await this.consumer?.disconnect().catch(() => undefined);
  }

  waitFor(positions: RecordPosition[], timeoutMs: number): Promise<void> {
    const targets = new Map<number, bigint>();
    for (const p of positions) {
      if (p.topic !== this.topic) continue;
      const past = BigInt(p.offset) + 1n;
      if ((targets.get(p.partition) ?? 0n) < past) targets.set(p.partition, past);
    }
    return this.waitForTargets(targets, timeoutMs);
  }

  private waitForTargets(targets: Map<number, bigint>, timeoutMs: number): Promise<void> {
    if (this.reached(targets)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        targets,
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

  private advance(partition: number, lastOffset: string): void {
    const next = BigInt(lastOffset) + 1n;
    if ((this.position.get(partition) ?? 0n) >= next) return;
    this.position.set(partition, next);
    this.settleWaiters();
  }

  private apply(key: string | null, value: string | null): void {
    if (key === null) return;
    let decoded: T | undefined;
    if (value !== null) {
      try {
        decoded = this.decode(value);
      } catch (err) {
        this.logger.warn({ topic: this.topic, key, err }, 'skipping undecodable state record');
        return;
      }
    }
    if (decoded === undefined) this.state.delete(key);
    else this.state.set(key, decoded);
    for (const l of this.listeners) l(key, decoded);
  }

  private reached(targets: Map<number, bigint>): boolean {
    for (const [partition, offset] of targets) if ((this.position.get(partition) ?? 0n) < offset) return false;
    return true;
  }

  private settleWaiters(): void {
    for (const w of this.waiters) {
      if (!this.reached(w.targets)) continue;
      clearTimeout(w.timer);
      this.waiters.delete(w);
      w.resolve();
    }
  }
}
