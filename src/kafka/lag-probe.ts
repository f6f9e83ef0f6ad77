import type { Logger } from '../logger';
import type { PartitionLag } from './types';

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

/** What the latest fetch of a partition told: its high watermark, and the offset it read up to (markers too). */
export interface FetchedTo {
  topic: string;
  partition: number;
  highWatermark: bigint;
  to: bigint;
}

/** Where a member's work on a partition stands (PartitionProgress). */
interface WorkOn {
  /** the oldest unfinished offset, or (with none) one past the highest started */
  readonly low: bigint;
  readonly unfinished: boolean;
  readonly commitPoint: bigint;
}

/** The highest of what is known (undefined: nothing is). */
const latest = (...known: (bigint | undefined)[]) =>
  known.reduce<bigint | undefined>(
    (max, k) => (k !== undefined && (max === undefined || k > max) ? k : max),
    undefined,
  );

/**
 * Per partition held: from the oldest unfinished record (or, with none, from where the fetch got to, or the group
 * committed) to the partition's end, as the latest fetch or lag probe knew it.
 */
export function heldLag(
  assignment: Set<string>,
  fetched: Map<string, FetchedTo>,
  work: Map<string, WorkOn>,
  probe: LagProbe | undefined,
): PartitionLag[] {
  const lags: PartitionLag[] = [];
  for (const key of assignment) {
    const f = fetched.get(key);
    const w = work.get(key);
    const end = latest(f?.highWatermark, probe?.ends.get(key));
    const read = latest(w?.low, f?.to, probe?.committed.get(key));
    const from = w?.unfinished ? w.commitPoint : read !== undefined && read < 0n ? 0n : read;
    if (end === undefined || from === undefined) continue;
    const [topic, partition] = key.split('\u0000');
    lags.push({ topic, partition: Number(partition), lag: Math.max(0, Number(end - from)) });
  }
  return lags;
}
