import type { OutgoingRecord, Publisher } from '../../src/kafka/types';

interface Waiting {
  record: OutgoingRecord;
  resolve(): void;
  reject(err: Error): void;
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
  private waiting: Waiting[] = [];
  private publishing = false;
  private lastPublishAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly publisher: Publisher,
    private readonly lingerMs: number,
    /** records per publish; more wait for the next one */
    private readonly maxRecords = 1000,
  ) {}

  /** Resolves once the record is committed; rejects when the publish that carried it failed. */
  record(record: OutgoingRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ record, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.publishing || this.waiting.length === 0) return;
    const wait = this.lastPublishAt + this.lingerMs - performance.now();
    if (wait <= 0 || this.waiting.length >= this.maxRecords) {
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
    const batch = this.waiting.splice(0, this.maxRecords);
    try {
      await this.publisher.publish(batch.map((w) => w.record));
      for (const w of batch) w.resolve();
    } catch (err) {
      for (const w of batch) w.reject(err as Error);
    } finally {
      this.publishing = false;
      this.schedule();
    }
  }
}
