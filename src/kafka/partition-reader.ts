import type { Kafka } from 'kafkajs';
import type { Logger } from '../logger';
import { atMost, withKafkaTimeout } from './kafka-timeout';
import { Reading } from './partition-reading';
import { ReaderClusters, type ReadingCluster } from './reader-clusters';
import type { PartitionReader, PartitionReadOptions, PartitionReading } from './types';

const LATEST = -1;
/** a fetch waits at the broker up to a second: a shutdown gives the connections a little more to close */
const CLOSE_WAIT_MS = 2000;

/** PartitionReader on kafkajs; tracks its readings so the gateway can stop them on shutdown. */
export class KafkaPartitionReader implements PartitionReader {
  private readonly readings = new Set<Reading>();
  private readonly clusters: ReaderClusters;
  /** kept for ListOffsets, which never waits at the broker: one round trip once connected */
  private readonly lookups: ReadingCluster;
  private connecting: Promise<void> | undefined;

  constructor(
    kafka: Kafka,
    private readonly logger: Logger,
  ) {
    this.clusters = new ReaderClusters(kafka);
    this.lookups = this.clusters.take();
  }

  async open(options: PartitionReadOptions, timeoutMs: number): Promise<PartitionReading> {
    const reading = new Reading(this.clusters, options, this.logger, (r) => this.readings.delete(r));
    this.readings.add(reading);
    await reading.start(timeoutMs);
    return reading;
  }

  /** The last stable offset (read_committed): what a reading can reach now. */
  async endOffset(topic: string, partition: number, timeoutMs: number): Promise<string> {
    return withKafkaTimeout(this.lastStable(topic, partition), timeoutMs, `end offset of ${topic}/${partition}`);
  }

  private async lastStable(topic: string, partition: number): Promise<string> {
    this.connecting ??= this.lookups.connect().catch((err: unknown) => {
      this.connecting = undefined;
      throw err;
    });
    await this.connecting;
    await this.lookups.addTargetTopic(topic);
    try {
      const query = [{ topic, fromTimestamp: LATEST, partitions: [{ partition }] }];
      const answer = await this.lookups.fetchTopicsOffset(query);
      const found = answer[0]?.partitions.find((p) => p.partition === partition);
      if (!found) throw new Error(`${topic} has no partition ${partition}`);
      return found.offset;
    } catch (err) {
      // A moved leader or a stale partition list: the next call asks with fresh metadata.
      await this.lookups.refreshMetadata().catch(() => undefined);
      throw err;
    }
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
    this.connecting = undefined;
    await this.lookups.disconnect().catch(() => undefined);
  }
}
