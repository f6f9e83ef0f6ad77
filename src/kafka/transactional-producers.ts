import type { Kafka, Producer, ProducerConfig } from 'kafkajs';
import { producerWithCachedCoordinator } from './cached-coordinator';
import { KafkaUnavailableError } from './types';

export interface TransactionalProducersOptions {
  /** taken in turn, one transaction each; a fencing writer has exactly one */
  transactionalIds: string[];
  timeoutMs: number;
}

/**
 * The initialized kafkajs producers of a publisher's transactional ids, one per id, used in turn.
 *
 * Why turns: a transaction begun on an id right after its commit is refused (CONCURRENT_TRANSACTIONS) until the
 * coordinator has written that commit's markers, which takes milliseconds under load. Back to back, every
 * transaction waited for its predecessor's markers. The next id is free at once, while the last one's markers are
 * written. The publisher still runs one transaction at a time, so records land in the order they were sent.
 */
export class TransactionalProducers {
  private readonly producers: (Producer | undefined)[];
  private readonly connecting: (Promise<Producer> | undefined)[];
  private turn = 0;
  private closed = false;
  /** initializations of any of the ids by this object: it changes whenever an id is initialized again */
  initializations = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly options: TransactionalProducersOptions,
    /** kafkajs's producer with a cached coordinator; a fake in unit tests */
    private readonly create: (kafka: Kafka, config: ProducerConfig) => Producer = producerWithCachedCoordinator,
  ) {
    if (options.transactionalIds.length === 0) throw new Error('at least one transactional id is needed');
    this.producers = options.transactionalIds.map(() => undefined);
    this.connecting = options.transactionalIds.map(() => undefined);
  }

  /** every id initialized by this object and not replaced since */
  get ready(): boolean {
    return this.producers.every((p) => p !== undefined);
  }

  /** the producer of the id whose turn it is, initialized */
  current(): Promise<Producer> {
    return this.connected(this.turn);
  }

  /**
   * After `committed`'s transaction committed: the next one goes to the next id. Only while `committed` still holds
   * the turn: a transaction abandoned at its deadline can commit after its producers were reset, and passing the
   * turn on then would leave the id it failed on (maybe with a newer abandoned transaction) unfenced while the
   * other id writes. A failed transaction keeps the turn (see reset).
   */
  advance(committed: Producer): void {
    if (this.producers[this.turn] !== committed) return;
    this.turn = (this.turn + 1) % this.producers.length;
  }

  /** Every id initialized: whatever a replaced producer left open is then committed or aborted for good. */
  async initializeAll(): Promise<void> {
    await Promise.all(this.producers.map((_, i) => this.connected(i)));
  }

  /**
   * After any failed transaction every producer is replaced, whatever its abort did: kafkajs's transaction state
   * can be left unusable, and a fresh producer with the same transactional id fences the old one. All of them, so
   * that a broker that lost its producer state costs one failed transaction, not one per id.
   */
  reset(): void {
    for (const [i, old] of this.producers.entries()) {
      this.producers[i] = undefined;
      void old?.disconnect().catch(() => undefined);
    }
  }

  /** For good: no id is initialized again by this object. */
  async close(): Promise<void> {
    this.closed = true;
    const old = [...this.producers];
    this.producers.fill(undefined);
    await Promise.all(old.map((p) => p?.disconnect().catch(() => undefined)));
  }

  private connected(i: number): Promise<Producer> {
    const existing = this.producers[i];
    if (existing) return Promise.resolve(existing);
    this.connecting[i] ??= this.connect(i).finally(() => {
      this.connecting[i] = undefined;
    });
    return this.connecting[i];
  }

  /**
   * A producer whose transactional id is initialized: that fences any earlier producer with the same id (in this
   * process or a zombie elsewhere) and settles the transaction it left open. kafkajs initializes the id only at the
   * first transaction, so an empty one is begun and dropped here.
   */
  private async connect(i: number): Promise<Producer> {
    if (this.closed) throw new KafkaUnavailableError('publisher closed');
    const producer = this.create(this.kafka, {
      transactionalId: this.options.transactionalIds[i],
      idempotent: true,
      maxInFlightRequests: 1,
      // A writer that dies mid-transaction holds every read_committed reader of those partitions
      // (all the views) until the coordinator aborts it after this long. Ours last milliseconds and a
      // caller gives up after timeoutMs, so keep it short instead of kafkajs's 60 s.
      transactionTimeout: Math.max(10000, 2 * this.options.timeoutMs),
      // An id whose last commit's markers are still being written answers CONCURRENT_TRANSACTIONS for about a
      // millisecond on a local broker, and kafkajs's first retry waits initialRetryTime. At 10 ms, about 1 in 11
      // transactions a millisecond apart waited 10 ms more, and back-to-back ones took 13 ms instead of 1.8 (one
      // id). Later retries still back off exponentially, up to a second.
      retry: { initialRetryTime: 1, maxRetryTime: 1000, retries: Number.MAX_SAFE_INTEGER },
    });
    try {
      await producer.connect();
      await (await producer.transaction()).abort();
    } catch (err) {
      await producer.disconnect().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await producer.disconnect().catch(() => undefined);
      throw new KafkaUnavailableError('publisher closed');
    }
    this.producers[i] = producer;
    this.initializations += 1;
    return producer;
  }
}
