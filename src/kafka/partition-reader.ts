import type { Kafka } from 'kafkajs';
import type { Logger } from '../logger';
import { atMost, withKafkaTimeout } from './kafka-timeout';
import { isKafkaFailure } from './kafka-failure';
import { Reading } from './partition-reading';
import { HighWatermarks } from './high-watermarks';
import { ReaderClusters } from './reader-clusters';
import { KafkaUnavailableError, type PartitionReader, type PartitionReadOptions, type PartitionReading } from './types';

/** a fetch waits at the broker up to a second: a shutdown gives the connections a little more to close */
const CLOSE_WAIT_MS = 2000;

/** PartitionReader on kafkajs; tracks its readings so the gateway can stop them on shutdown. */
export class KafkaPartitionReader implements PartitionReader {
  private readonly readings = new Set<Reading>();
  private readonly clusters: ReaderClusters;
  /** kept connected for ListOffsets, which never waits at the broker: one round trip */
  private readonly ends: HighWatermarks;
  /** the same, read_uncommitted: the log's end, open transactions included */
  private readonly logEnds: HighWatermarks;

  constructor(
    kafka: Kafka,
    private readonly logger: Logger,
    /** the gateway's probe: while no broker answers, a reading is refused at once, as a write is */
    private readonly health: { readonly up: boolean } = { up: true },
  ) {
    this.clusters = new ReaderClusters(kafka);
    this.ends = new HighWatermarks(kafka, { lastStable: true });
    this.logEnds = new HighWatermarks(kafka);
  }

  async open(options: PartitionReadOptions, timeoutMs: number): Promise<PartitionReading> {
    this.refuseWhileDown();
    const reading = new Reading(this.clusters, options, this.logger, (r) => this.readings.delete(r));
    this.readings.add(reading);
    await reading.start(timeoutMs);
    return reading;
  }

  /** The last stable offset (read_committed): what a reading can reach now. */
  endOffset(topic: string, partition: number, timeoutMs: number): Promise<string> {
    return this.offsetOf('end', topic, partition, timeoutMs);
  }

  /** The high watermark: past every record written so far, open transactions' too. */
  logEnd(topic: string, partition: number, timeoutMs: number): Promise<string> {
    return this.offsetOf('log end', topic, partition, timeoutMs);
  }

  /** The log start: the first offset the partition still holds; below it, retention deleted the records. */
  startOffset(topic: string, partition: number, timeoutMs: number): Promise<string> {
    return this.offsetOf('start', topic, partition, timeoutMs);
  }

  private async offsetOf(
    at: 'end' | 'start' | 'log end',
    topic: string,
    partition: number,
    timeoutMs: number,
  ): Promise<string> {
    this.refuseWhileDown();
    const what = `${at} offset of ${topic}/${partition}`;
    // A ListOffsets that kafkajs failed is Kafka not answering as it should, whatever kafkajs calls it: a 503 for a
    // request. Anything else (a bug of ours) stays what it is, a 500.
    const asking = (at === 'log end' ? this.logEnds.of(topic) : this.ends.of(topic, at)).catch((err: unknown) =>
      Promise.reject(isKafkaFailure(err) ? new KafkaUnavailableError(what, err) : err),
    );
    const offsets = await withKafkaTimeout(asking, timeoutMs, what);
    const offset = offsets.get(partition);
    if (offset === undefined) throw new Error(`${topic} has no partition ${partition}`);
    return offset.toString();
  }

  private refuseWhileDown(): void {
    if (!this.health.up) throw new KafkaUnavailableError('Kafka is not reachable');
  }

  /** readings not yet stopped, for operators and tests */
  get openReadings(): number {
    return this.readings.size;
  }

  /** connections kept for the next reading (reader-clusters.ts), for tests */
  get idleConnections(): number {
    return this.clusters.idleCount;
  }

  /** Stops every reading and closes every connection; waits for a fetch in flight at most CLOSE_WAIT_MS. */
  async closeAll(): Promise<void> {
    const readings = [...this.readings];
    await Promise.all(readings.map((r) => r.stop()));
    await atMost(Promise.all(readings.map((r) => r.closed())), CLOSE_WAIT_MS);
    await this.clusters.close();
    await this.ends.close();
    await this.logEnds.close();
  }
}
