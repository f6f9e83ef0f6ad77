import { topicNames, type Topics } from '../../src/kafka/topics';
import type {
  OutgoingRecord, PublishOptions, Publisher, RecordPosition, StateView, ViewSource, ViewSpec,
} from '../../src/kafka/types';

/**
 * A Publisher that keeps what it was given; `failNext` makes the next calls reject, as a broker fault would.
 * `onCommitted` sees each call's records once they "committed", before the call resolves (FakeKafka feeds its
 * views from it, so a store's read-your-writes holds as it does on Kafka).
 */
export class FakePublisher implements Publisher {
  readonly published: OutgoingRecord[] = [];
  failNext = 0;
  private offset = 0;

  constructor(private readonly onCommitted?: (records: OutgoingRecord[]) => void) {}

  async publish(records: OutgoingRecord[], _options?: PublishOptions): Promise<RecordPosition[]> {
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error('Kafka did not acknowledge (fake)');
    }
    this.published.push(...records);
    this.onCommitted?.(records);
    return records.map((r) => ({ topic: r.topic, partition: r.partition ?? 0, offset: String(this.offset++) }));
  }

  async publishStaged(
    first: OutgoingRecord[],
    then: (positions: RecordPosition[]) => OutgoingRecord[],
  ): Promise<RecordPosition[]> {
    const a = await this.publish(first);
    return [...a, ...(await this.publish(then(a)))];
  }

  on(topic: string): OutgoingRecord[] {
    return this.published.filter((r) => r.topic === topic);
  }
}

/** An in-memory StateView: writes through `set` apply at once; syncs can be made to fail. */
export class FakeView<T> implements StateView<T> {
  private readonly state = new Map<string, T>();
  private readonly listeners: ((key: string, value: T | undefined) => void)[] = [];
  readonly caughtUp = true;
  failSyncs = 0;
  syncs = 0;

  set(key: string, value: T | undefined): void {
    if (value === undefined) this.state.delete(key);
    else this.state.set(key, value);
    for (const l of this.listeners) l(key, value);
  }

  get(key: string): T | undefined {
    return this.state.get(key);
  }

  values(): IterableIterator<T> {
    return this.state.values();
  }

  get size(): number {
    return this.state.size;
  }

  /** the next N waits for positions fail, as a view that did not catch up in time */
  failWaits = 0;

  async waitFor(): Promise<void> {
    if (this.failWaits > 0) {
      this.failWaits -= 1;
      throw new Error('view did not catch up within the deadline (fake)');
    }
  }

  onChange(listener: (key: string, value: T | undefined) => void): void {
    this.listeners.push(listener);
  }

  /** when the last successful sync began, as KafkaStateView keeps it; tests move it back to age the view */
  syncedAt = 0;
  /** applied by the next sync that runs: what was committed elsewhere and only a sync brings in */
  private readonly unseen: (() => void)[] = [];

  commitElsewhere(apply: () => void): void {
    this.unseen.push(apply);
  }

  /** Syncs only when the last sync began before `time`, as the real view does; calls that sync are counted. */
  async syncedSince(time = Date.now()): Promise<void> {
    if (this.syncedAt >= time) return;
    this.syncs += 1;
    const startedAt = Date.now();
    if (this.failSyncs > 0) {
      this.failSyncs -= 1;
      throw new Error('view did not catch up (fake)');
    }
    for (const apply of this.unseen.splice(0)) apply();
    this.syncedAt = Math.max(this.syncedAt, startedAt);
  }
}

/**
 * The process's Kafka for the unit tier: a ViewSource whose views are fed by its publisher, decoded by each view's
 * spec as KafkaGateway does. One view per topic, and asking for a topic with another spec throws, as the gateway's
 * cache does. A failed publish (failNext) applies nothing: all or none, like a transaction.
 */
export class FakeKafka implements ViewSource {
  readonly topics: Topics;
  readonly publisher: FakePublisher;
  private readonly views = new Map<string, { spec: ViewSpec<unknown>; view: FakeView<unknown> }>();

  constructor(prefix = 'unit.') {
    this.topics = topicNames(prefix);
    this.publisher = new FakePublisher((records) => this.apply(records));
  }

  async view<T>(spec: ViewSpec<T>): Promise<StateView<T>> {
    return this.viewOf(spec);
  }

  /** The fake behind a spec's view, for a test to arrange state or break syncs. */
  viewOf<T>(spec: ViewSpec<T>): FakeView<T> {
    const name = this.topics[spec.topic];
    const open = this.views.get(name);
    if (open && open.spec !== spec) throw new Error(`${spec.topic} is already open with another spec`);
    if (open) return open.view as FakeView<T>;
    const view = new FakeView<T>();
    this.views.set(name, { spec: spec as ViewSpec<unknown>, view: view as FakeView<unknown> });
    return view;
  }

  private apply(records: OutgoingRecord[]): void {
    for (const r of records) {
      const open = this.views.get(r.topic);
      open?.view.set(r.key, r.value === null ? undefined : open.spec.decode(r.value));
    }
  }
}
