import type { OutgoingRecord, Publisher } from '../../src/kafka/types';

/** The records of one publish, and the one promise every record of it is answered with. */
class Batch {
  readonly records: OutgoingRecord[] = [];
  readonly done: Promise<void>;
  resolve!: () => void;
  reject!: (err: Error) => void;

  constructor() {
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // A batch whose callers have all gone (handed back) must not be an unhandled rejection.
    this.done.catch(() => undefined);
  }
}

/**
 * Writes the delivery history: the attempt records of many deliveries, of every lane, go out in one publish (one
 * transaction). At most one publish is in flight, and one starts at most every `lingerMs`, so a busy bridge writes
 * one transaction per many attempts instead of about one per twenty: each transaction costs three Kafka requests,
 * and each batch of finished events an offset commit per partition, all on the bridge's one thread. An idle bridge
 * writes a lone record at once. A record's promise settles with the publish that carried it, so its event is
 * finished (and committed) only after its attempts are in the history; a failed publish rejects every record it
 * carried, and each caller records its own again (never skipped).
 */
export class AttemptRecorder {
  /** batches to publish, oldest first; only the last takes more records */
  private readonly waiting: Batch[] = [];
  private publishing = false;
  private lastPublishAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly publisher: Publisher,
    private readonly lingerMs: number,
    /** records per publish; more wait for the next one */
    private readonly maxRecords = 1000,
  ) {}

  /**
   * Resolves once the record is committed; rejects when the publish that carried it failed. The records of one publish
   * share one promise, not a promise and two closures each.
   */
  record(record: OutgoingRecord): Promise<void> {
    let batch = this.waiting[this.waiting.length - 1];
    if (!batch || batch.records.length >= this.maxRecords) this.waiting.push((batch = new Batch()));
    batch.records.push(record);
    this.schedule();
    return batch.done;
  }

  private schedule(): void {
    if (this.publishing || this.waiting.length === 0) return;
    const wait = this.lastPublishAt + this.lingerMs - performance.now();
    if (wait <= 0 || this.waiting[0].records.length >= this.maxRecords) {
      clearTimeout(this.timer);
      this.timer = undefined;
      void this.publish();
    } else {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.schedule();
      }, wait);
    }
  }

  private async publish(): Promise<void> {
    this.publishing = true;
    this.lastPublishAt = performance.now();
    const batch = this.waiting.shift() as Batch;
    try {
      await this.publisher.publish(batch.records);
      batch.resolve();
    } catch (err) {
      batch.reject(err as Error);
    } finally {
      this.publishing = false;
      this.schedule();
    }
  }
}
