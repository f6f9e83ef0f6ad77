import type { Logger } from '../logger';
import type { FetchedMessage, ReadingCluster } from './reader-clusters';
import { TopicReading } from './topic-reading';
import { KafkaUnavailableError, type RecordPosition, type StateView, type WrittenRecord } from './types';
import { withKafkaTimeout } from './kafka-timeout';
import { isKafkaFailure } from './kafka-failure';
import { WrittenAhead } from './written-ahead';

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
 * Each view reads every partition from the start, assigned (topic-reading.ts:
 * no consumer group). Being "synced" is proven without writing anything: the view asks the
 * broker for the high watermark of every partition and waits until its
 * read_committed consumer has fetched past it, which it can only do once every
 * transaction that had written below it is decided (see high-watermarks.ts for
 * why the last stable offset is not enough). The position counts transaction
 * markers and aborted records too (it moves to the end of each fetched record
 * batch), so a log that ends in a marker is reached.
 */
export class KafkaStateView<T> implements StateView<T> {
  private readonly state = new Map<string, T>();
  /** partition → next offset this view's consumer will fetch */
  private readonly position = new Map<number, bigint>();
  private readonly waiters = new Set<Waiter>();
  private readonly listeners: ((key: string, value: T | undefined) => void)[] = [];
  /** records this process wrote and applied ahead of its reading (applyWritten) */
  private readonly ahead: WrittenAhead;
  private reading: TopicReading | undefined;
  private synced = false;
  private stopped = false;
  /** when the last completed sync started: everything committed before it is applied */
  private lastSyncAt = 0;
  private syncInFlight: { startedAt: number; done: Promise<void> } | undefined;

  constructor(
    /** the view's own cluster connection (reader-clusters.ts): a fetch may wait at the broker */
    private readonly newCluster: () => ReadingCluster,
    readonly topic: string,
    private readonly decode: (value: string) => T,
    private readonly latestOffsets: LatestOffsets,
    private readonly logger: Logger,
  ) {
    this.ahead = new WrittenAhead(topic, logger);
  }

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
    const started = Date.now();
    const reading = new TopicReading(
      this.newCluster(),
      {
        topic: this.topic,
        positionOf: (partition) => this.position.get(partition) ?? 0n,
        onFetched: (partition, records, next) => this.onFetched(partition, records, next),
      },
      this.logger,
    );
    this.reading = reading;
    await reading.start(timeoutMs);
    await this.syncedSince(Date.now(), Math.max(1, timeoutMs - (Date.now() - started)));
    this.synced = true;
  }

  private onFetched(partition: number, records: FetchedMessage[], next: bigint): void {
    const from = this.position.get(partition) ?? 0n;
    if (next <= from) return;
    for (const m of records) {
      const offset = BigInt(m.offset);
      if (offset < from) continue;
      const key = m.key?.toString() ?? null;
      if (key !== null && this.ahead.size > 0 && this.ahead.covers(key, partition, offset)) continue;
      this.apply(key, m.value?.toString() ?? null);
    }
    this.position.set(partition, next);
    if (this.ahead.size > 0) this.ahead.forgetBefore(partition, next);
    this.settleWaiters();
  }

  applyWritten(records: WrittenRecord[]): boolean {
    // A reading that has not passed a write of this process's for this long is stuck or far behind: what the view
    // shows of other writers is stale, so a write that changes a key it shows waits to read itself back (and answers
    // 503 if it cannot). A write that only creates keys (a task accepted, a subscription made) is shown at once: no
    // state of them is there to be stale, and the write is committed. A runner killed mid-transaction holds the
    // reading for seconds; a 503 for every task accepted meanwhile would hide tasks that were made.
    const stuck = this.ahead.stuck;
    if (stuck && records.some((r) => this.shows(r))) return false;
    // Past the bound a creation is still answered as made, for it is: a 503 would have a client without an
    // Idempotency-Key make it again (a bulk create of a hundred orders reaches the bound in a hundred requests). It is
    // shown once the reading gets to it.
    if (stuck && this.ahead.full) {
      this.ahead.tellFull();
      return true;
    }
    for (const r of records) {
      if (r.topic !== this.topic) continue;
      const offset = BigInt(r.offset);
      // Read already (or something later of the key is shown): the reading applied it, or a newer value.
      if ((this.position.get(r.partition) ?? 0n) > offset) continue;
      if (this.ahead.note(r.key, r.partition, offset)) this.apply(r.key, r.value);
    }
    return true;
  }

  /** Whether the view holds state of the written record's key (read, or applied ahead). */
  private shows(r: WrittenRecord): boolean {
    return r.topic === this.topic && r.key !== null && (this.state.has(r.key) || this.ahead.has(r.key));
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
        // kafkajs's own error (a connection the broker closed, a request timed out) told as what it is to a caller:
        // Kafka unavailable, the client's 503. Left as it was, it carried no problem kind and was answered 500.
        if (this.stopped || Date.now() + delay >= deadline) {
          throw isKafkaFailure(err) ? new KafkaUnavailableError(`offsets of ${this.topic}`, err) : err;
        }
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
    await this.reading?.stop();
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
    for (const l of this.listeners) {
      // A listener's failure is its own: neither the reading nor the write that applied the record may fail with it.
      try {
        l(key, decoded);
      } catch (err) {
        this.logger.error({ topic: this.topic, key, err }, 'state view listener failed');
      }
    }
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
