import { MAX_SEND_BYTES, tooLarge } from '../../src/kafka/record-size';
import { topicNames, type Topics } from '../../src/kafka/topics';
import type { LogLevel } from '../../src/config';
import { createLogger, type Logger } from '../../src/logger';
import {
  KafkaUnavailableError,
  type CommitHold,
  type IncomingRecord,
  type OutgoingRecord,
  type PartitionReader,
  type PartitionReading,
  type PartitionReadOptions,
  type PublishOptions,
  type Publisher,
  type RecordPosition,
  type WrittenRecord,
  type StateView,
  type ViewSource,
  type ViewSpec,
} from '../../src/kafka/types';

/**
 * A Publisher that keeps what it was given; `failNext` makes the next calls reject, as a broker fault would, and a
 * record larger than a send takes is refused (RecordTooLargeError), as the real one refuses it.
 * `onCommitted` sees each call's records once they "committed", before the call resolves (FakeKafka feeds its
 * views from it, so a store's read-your-writes holds as it does on Kafka).
 */
export class FakePublisher implements Publisher {
  readonly published: OutgoingRecord[] = [];
  /** every committed record with its position, in commit order (what a FakePartitionReader reads) */
  readonly log: (OutgoingRecord & RecordPosition)[] = [];
  /** called after every commit, once its records are in the log */
  readonly afterCommit = new Set<() => void>();
  failNext = 0;
  private offset = 0;

  constructor(private readonly onCommitted?: (records: OutgoingRecord[]) => void) {}

  /** The offset the next record gets, whatever its topic and partition (one counter keeps the fake simple). */
  get nextOffset(): number {
    return this.offset;
  }

  async publish(records: OutgoingRecord[], _options?: PublishOptions): Promise<WrittenRecord[]> {
    // As the real publisher does: a record over what a send takes is refused before anything is written.
    const oversized = tooLarge(records, MAX_SEND_BYTES);
    if (oversized) throw oversized;
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error('Kafka did not acknowledge (fake)');
    }
    const positions: WrittenRecord[] = records.map((r) => ({
      topic: r.topic,
      partition: r.partition ?? 0,
      offset: String(this.offset++),
      key: r.key,
      value: r.value,
    }));
    this.published.push(...records);
    this.log.push(...records.map((r, i) => ({ ...r, ...positions[i] })));
    this.onCommitted?.(records);
    for (const listener of [...this.afterCommit]) listener();
    return positions;
  }

  async publishStaged(
    first: OutgoingRecord[],
    then: (positions: RecordPosition[]) => OutgoingRecord[],
  ): Promise<WrittenRecord[]> {
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

  entries(): IterableIterator<[string, T]> {
    return this.state.entries();
  }

  get size(): number {
    return this.state.size;
  }

  async waitFor(): Promise<void> {}

  /** Records written through a fake publisher reach a fake view by `set` (the test's wiring), not from here. */
  applyWritten(): boolean {
    return true;
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

/**
 * A PartitionReader over a FakePublisher's log: hands each committed record of the partition from the offset on, in
 * order, waiting for the receiver before the next (as the real reader's backpressure does), and follows new commits
 * until stopped, or up to `until`. Offsets come from the publisher's one counter, so a partition's offsets have gaps,
 * as transaction markers leave in Kafka.
 */
export class FakePartitionReader implements PartitionReader {
  /** readings open now */
  openReadings = 0;
  /** called with each reading once it is positioned, as the real reader resolves open() */
  readonly opened = new Set<(options: PartitionReadOptions) => void>();

  /** the log start of every partition: records below it count as deleted by retention (none unless a test says) */
  logStart = 0n;

  constructor(private readonly publisher: FakePublisher) {}

  async endOffset(): Promise<string> {
    return String(this.publisher.nextOffset);
  }

  /** no transactions stay open here: the log end is the end a reading can get to */
  async logEnd(): Promise<string> {
    return String(this.publisher.nextOffset);
  }

  async startOffset(): Promise<string> {
    return String(this.logStart);
  }

  async open(options: PartitionReadOptions): Promise<PartitionReading> {
    const { publisher } = this;
    let position = BigInt(options.fromOffset);
    let stopped = false;
    let pumping = false;
    const progress = new Set<() => void>();
    /** waits for reached(), ended by stop() as the real reader's are */
    const waits = new Set<{ timer: NodeJS.Timeout; reject: (err: Error) => void }>();
    const pump = async () => {
      if (pumping) return;
      pumping = true;
      try {
        for (;;) {
          const until = options.until === undefined ? undefined : BigInt(options.until);
          const next = publisher.log.find(
            (r) =>
              r.topic === options.topic &&
              r.partition === options.partition &&
              BigInt(r.offset) >= position &&
              (until === undefined || BigInt(r.offset) < until),
          );
          if (stopped) return;
          if (!next) {
            // Everything committed so far was passed: on Kafka, offsets up to the end (markers included).
            const end = BigInt(publisher.nextOffset);
            position = position > end ? position : until !== undefined && until < end ? until : end;
            for (const p of [...progress]) p();
            return;
          }
          const record: IncomingRecord = {
            topic: next.topic,
            partition: next.partition,
            offset: next.offset,
            key: next.key,
            value: next.value,
            headers: next.headers ?? {},
            timestamp: String(Date.now()),
          };
          await options.onRecord(record);
          position = BigInt(next.offset) + 1n;
          for (const p of [...progress]) p();
        }
      } finally {
        pumping = false;
      }
    };
    const follow = () => void pump();
    publisher.afterCommit.add(follow);
    this.openReadings += 1;
    const reading: PartitionReading = {
      reached: (offset, timeoutMs) =>
        new Promise<void>((resolve, reject) => {
          const wait = {
            timer: setTimeout(() => {
              progress.delete(check);
              waits.delete(wait);
              reject(new KafkaUnavailableError(`offset ${offset} not reached in ${timeoutMs} ms (fake)`));
            }, timeoutMs),
            reject,
          };
          const check = () => {
            if (position < BigInt(offset)) return;
            clearTimeout(wait.timer);
            progress.delete(check);
            waits.delete(wait);
            resolve();
          };
          waits.add(wait);
          progress.add(check);
          check();
        }),
      stop: async () => {
        if (stopped) return;
        stopped = true;
        publisher.afterCommit.delete(follow);
        for (const wait of waits) {
          clearTimeout(wait.timer);
          wait.reject(new Error('the reading was stopped (fake)'));
        }
        waits.clear();
        progress.clear();
        this.openReadings -= 1;
      },
    };
    for (const listener of [...this.opened]) listener(options);
    void pump();
    return reading;
  }
}

/** A logger (at warn unless told) whose lines a test can read, parsed: what an operator would see. */
export function capturedLogger(level: LogLevel = 'warn'): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger(level, 'test', { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/**
 * A partition's commit holds as the group consumer keeps them (PartitionProgress.hold): the commit may go up to the
 * lowest held offset. `holdCommit` is what the group consumer hands a handler.
 */
export class FakeCommitHolds {
  private readonly holds = new Set<{ offset: bigint }>();

  readonly holdCommit = (offset: bigint): CommitHold => {
    const h = { offset };
    this.holds.add(h);
    return {
      moveTo: (to) => {
        if (to > h.offset) h.offset = to;
      },
      release: () => void this.holds.delete(h),
    };
  };

  /** the offset the commit is held at, or undefined when nothing holds it */
  get lowest(): bigint | undefined {
    let low: bigint | undefined;
    for (const h of this.holds) if (low === undefined || h.offset < low) low = h.offset;
    return low;
  }
}
