import { loadConfig } from '../../src/config';
import { CP_KAFKA_IMAGE } from '../../src/embedded-kafka/kafka-version';
import { startLocalBroker } from '../../src/embedded-kafka/local-broker';

/**
 * One broker for the whole run: an explicit KAFKA_BROKERS wins; else, with
 * HOOKSTREAM_TEST_CONTAINERS=1, a cp-kafka testcontainer on the container runtime
 * testcontainers finds (DOCKER_HOST or Docker's socket), which must answer; else
 * the embedded broker from the Apache Kafka jars. The container is asked for, never
 * guessed: a runtime that happens to answer does not change which broker `npm test` uses.
 */
async function containerRuntimeAnswers(timeoutMs: number): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    const probe = getContainerRuntimeClient().then(
      () => true,
      () => false,
    );
    return await Promise.race([probe, new Promise<boolean>((r) => setTimeout(() => r(false), timeoutMs).unref())]);
  } catch {
    return false;
  }
}

export default async function globalSetup(): Promise<void> {
  const g = globalThis as Record<string, unknown>;
  if (process.env.KAFKA_BROKERS) {
    process.env.HOOKSTREAM_TEST_KAFKA = 'external';
    return;
  }
  if (process.env.HOOKSTREAM_TEST_CONTAINERS === '1') {
    if (!(await containerRuntimeAnswers(15000))) {
      const host = process.env.DOCKER_HOST ?? 'unset';
      throw new Error(`HOOKSTREAM_TEST_CONTAINERS=1, but no container runtime answers (DOCKER_HOST=${host})`);
    }
    const { KafkaContainer } = await import('@testcontainers/kafka');
    // KafkaContainer gives the offsets topic one replica but leaves the transaction log at 3
    // replicas, which one broker cannot create (every transactional write fails), and at 50
    // partitions, slow enough to create that a first transaction can time out finding its
    // coordinator. These match the embedded broker (src/embedded-kafka/local-broker.ts).
    const container = await new KafkaContainer(CP_KAFKA_IMAGE)
      .withKraft()
      .withEnvironment({
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS: '3',
        KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR: '1',
        KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR: '1',
        KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
        // As the embedded broker and docker-compose's (broker-storage.ts): a dead writer's transaction is aborted
        // within a second of its timeout.
        KAFKA_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS: '1000',
      })
      .start();
    process.env.KAFKA_BROKERS = `${container.getHost()}:${container.getMappedPort(9093)}`;
    process.env.HOOKSTREAM_TEST_KAFKA = 'container';
    g.__hookstreamStop = () => container.stop();
    return;
  }
  const broker = await startLocalBroker({ cacheDir: loadConfig({}).cacheDir, persistent: false });
  process.env.KAFKA_BROKERS = broker.bootstrap;
  process.env.HOOKSTREAM_TEST_KAFKA = 'embedded';
  process.env.HOOKSTREAM_TEST_BROKER_LOG = broker.logFile;
  g.__hookstreamStop = () => broker.stop();
}
