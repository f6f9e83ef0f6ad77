import { randomUUID } from 'node:crypto';
import type { Admin } from 'kafkajs';
import type { Logger } from '../logger';
import { runGroupConsumer } from './group-consumer';
import type { GroupMemberRecord } from './stale-member';
import { HighWatermarks } from './high-watermarks';
import { createKafkaClient } from './kafka-client';
import { KafkaHealth } from './kafka-health';
import { NamedBrokers } from './named-brokers';
import { PartitionMap } from './partition-map';
import { KafkaPartitionReader } from './partition-reader';
import { readingCluster } from './reader-clusters';
import { KafkaStateView } from './state-view';
import { ensureTopics, topicNames, type Topics } from './topics';
import { TransactionalPublisher } from './transactional-publisher';
import type {
  ConsumerHandle,
  FencingPublisher,
  GroupConsumerHandle,
  GroupConsumerOptions,
  PartitionLag,
  PartitionReader,
  Publisher,
  StateView,
  ViewSource,
  ViewSpec,
} from './types';
import { KafkaUnavailableError } from './types';

export interface KafkaGatewayOptions {
  brokers: string[];
  topicPrefix: string;
  partitions: number;
  timeoutMs: number;
  /** names this process in client ids and its transactional id */
  processName: string;
  logger: Logger;
  /**
   * Where the groups' members are kept across runs (the embedded broker's folder): a member of the previous run is
   * taken out of its group at the next start, so that start's join does not wait a session for it.
   */
  memberRecord?: GroupMemberRecord;
}

/** Everything the service needs from Kafka, behind the interfaces of ./types. */
export interface KafkaGateway extends ViewSource {
  readonly topics: Topics;
  readonly publisher: Publisher;
  readonly health: KafkaHealth;
  readonly brokers: string[];
  /** transactions committed by this process's publisher, and what they carried */
  publisherStats(): { transactions: number; records: number; calls: number };
  /** The process's one view of a compacted topic, started on first use and shared after (ViewSpec). */
  view<T>(spec: ViewSpec<T>): Promise<StateView<T>>;
  /**
   * A publisher of its own under a fixed transactional id (the task runner's,
   * one per input partition): creating it fences every earlier writer with that id.
   */
  fencingPublisher(transactionalId: string): FencingPublisher;
  /** every view started so far has caught up (readiness) */
  viewsCaughtUp(): boolean;
  /** every view started so far has applied what was committed before the call */
  syncViews(timeoutMs: number): Promise<void>;
  /** reads one partition from an offset (a task's event stream); any process can serve any reader */
  readonly partitionReader: PartitionReader & { readonly openReadings: number };
  /** the partition a record with this key goes to (murmur2, as Java clients choose) */
  partitionFor(topic: string, key: string): number;
  runGroupConsumer(options: GroupConsumerOptions): Promise<ConsumerHandle>;
  /** what this process's consumer groups have not finished, per partition (hookstream_kafka_consumer_lag) */
  consumerLag(): (PartitionLag & { group: string })[];
  /**
   * Initializes the publisher's transactional ids in the background (FindCoordinator, InitProducerId, for each):
   * begun while the views are read at start, it is over before the first request, which no longer pays for it.
   * A failure is left to the first write, which initializes them as before. Settles once they are initialized, or
   * that failed; never rejects.
   */
  warmUp(): Promise<void>;
  close(): Promise<void>;
}

export async function connectKafka(options: KafkaGatewayOptions): Promise<KafkaGateway> {
  const logger = options.logger.child({ component: 'kafka' });
  const health = new KafkaHealth(options.brokers);
  const named = new NamedBrokers(options.brokers, health);
  const kafka = createKafkaClient({
    brokers: named.list,
    clientId: `hookstream-${options.processName}`,
    timeoutMs: options.timeoutMs,
    logger,
  });
  await health.probe();
  health.start();
  const admin: Admin = kafka.admin();
  const topics = topicNames(options.topicPrefix);
  const partitions = new PartitionMap(admin);
  try {
    await admin.connect();
    const brokers = await ensureTopics(admin, topics, options.partitions);
    await partitions.load(Object.values(topics));
    named.start(admin, brokers);
  } catch (err) {
    // Start-up tries again (src/startup/): a failed attempt leaves no probe, timer or connection behind.
    health.stop();
    named.stop();
    await admin.disconnect().catch(() => undefined);
    throw err;
  }
  const newPublisher = (transactionalIds: string[]) =>
    new TransactionalPublisher(kafka, partitions, health, logger, {
      transactionalIds,
      timeoutMs: options.timeoutMs,
      maxBatchRecords: 500,
    });
  // Two ids taken in turn, so a transaction never waits for the last one's commit markers (TransactionalProducers).
  // A fencing writer keeps one: its id is what a new owner initializes to fence the old.
  const processId = `${options.topicPrefix}${options.processName}-${randomUUID()}`;
  const publisher = newPublisher([`${processId}-a`, `${processId}-b`]);
  const views = new Map<string, { spec: ViewSpec<unknown>; view: Promise<KafkaStateView<unknown>> }>();
  const highWatermarks = new HighWatermarks(kafka);
  const newReadingCluster = readingCluster(kafka);
  const started: KafkaStateView<unknown>[] = [];

  async function startView<T>(topic: string, decode: (value: string) => T): Promise<KafkaStateView<T>> {
    const view = new KafkaStateView<T>(newReadingCluster, topic, decode, () => highWatermarks.of(topic), logger);
    started.push(view as KafkaStateView<unknown>);
    // Views can take a while to read a large topic: allow far more than one request's timeout.
    await view.start(Math.max(60000, options.timeoutMs));
    return view;
  }
  const consumers: { group: string; handle: GroupConsumerHandle }[] = [];
  const partitionReader = new KafkaPartitionReader(kafka, logger, health);

  return {
    topics,
    publisher,
    health,
    brokers: options.brokers,
    publisherStats: () => ({ ...publisher.stats }),
    view<T>(spec: ViewSpec<T>): Promise<StateView<T>> {
      const topic = topics[spec.topic];
      const open = views.get(topic);
      if (open && open.spec !== spec) throw new Error(`the view of ${topic} is open already, with another decoder`);
      if (open) return open.view as Promise<StateView<T>>; // the same spec, so the same T
      const view = startView(topic, spec.decode);
      views.set(topic, { spec: spec as ViewSpec<unknown>, view: view as Promise<KafkaStateView<unknown>> });
      return view;
    },
    fencingPublisher: (transactionalId) => newPublisher([transactionalId]),
    viewsCaughtUp: () => started.every((v) => v.caughtUp),
    async syncViews(timeoutMs) {
      // As a write is: at once when the broker is known to be unreachable, not after the whole deadline.
      if (!health.up) throw new KafkaUnavailableError('Kafka is not reachable');
      const since = Date.now();
      await Promise.all(started.map((v) => v.syncedSince(since, timeoutMs)));
    },
    partitionReader,
    partitionFor: (topic, key) => partitions.partitionFor(topic, key),
    async runGroupConsumer(consumerOptions) {
      const withRecord = { memberRecord: options.memberRecord, ...consumerOptions };
      const handle = await runGroupConsumer(kafka, withRecord, logger, (topic) => highWatermarks.of(topic));
      consumers.push({ group: consumerOptions.groupId, handle });
      return handle;
    },
    consumerLag: () => consumers.flatMap(({ group, handle }) => handle.lag().map((l) => ({ group, ...l }))),
    warmUp() {
      return publisher.settled().then(
        () => undefined,
        (err: unknown) => {
          logger.debug({ err }, 'transactional ids not initialized at start; the first write initializes them');
        },
      );
    },
    async close() {
      await Promise.all(consumers.map((c) => c.handle.stop()));
      await partitionReader.closeAll();
      await Promise.all(started.map((v) => v.stop()));
      await publisher.close();
      await highWatermarks.close();
      named.stop();
      await admin.disconnect().catch(() => undefined);
      health.stop();
    },
  };
}
