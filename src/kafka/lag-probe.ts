import type { Logger } from '../logger';

/** How often a running consumer asks where its partitions end: a scrape reads the latest answer, never Kafka. */
export const LAG_PROBE_MS = 3000;

/** What a probe asks Kafka: where each partition of a topic ends, and where a group committed. */
export interface LagSources {
  highWatermarks(topic: string): Promise<Map<number, bigint>>;
  /** the group's committed offsets of these topics (-1: none) */
  committed(topics: string[]): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

/** A partition as a map key, here and in the group consumer. */
export const tp = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/**
 * The ends of a consumer's partitions, asked every LAG_PROBE_MS while it runs. kafkajs tells a partition's high
 * watermark only as it hands out a batch of it, so a partition whose batch waits (behind a handler that waits for a
 * free slot, at TASK_CONCURRENCY) kept the end of an older batch, or none: its waiting records counted for nothing,
 * just when an operator scales by them. Also where the group committed: a partition held but not read from since
 * starts there.
 */
export class LagProbe {
  readonly ends = new Map<string, bigint>();
  readonly committed = new Map<string, bigint>();
  private timer: NodeJS.Timeout | undefined;
  private asking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly sources: LagSources,
    private readonly topics: string[],
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.asking ??= this.ask().finally(() => (this.asking = undefined));
    }, LAG_PROBE_MS);
    this.timer.unref();
  }

  /** Asks no more; resolves once a question in flight has its answer (its connection is then closed by the caller). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.asking;
  }

  private async ask(): Promise<void> {
    try {
      for (const topic of this.topics) {
        if (this.stopped) return;
        for (const [partition, end] of await this.sources.highWatermarks(topic))
          this.ends.set(tp(topic, partition), end);
      }
      if (this.stopped) return;
      for (const { topic, partitions } of await this.sources.committed(this.topics)) {
        for (const { partition, offset } of partitions) this.committed.set(tp(topic, partition), BigInt(offset));
      }
    } catch (err) {
      // The lag then shows the last answer, as it does while Kafka is down.
      this.logger.debug({ err, topics: this.topics }, 'lag probe failed; the lag shows the last answer');
    }
  }
}
