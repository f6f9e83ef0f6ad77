import { loadConfig } from '../../src/config';
import { CP_KAFKA_IMAGE } from '../../src/kafka/kafka-version';
import { startLocalBroker } from '../../src/kafka/local-broker';

/**
 * One broker for the whole run: an explicit KAFKA_BROKERS wins; else a
 * cp-kafka container when a container runtime answers within a few seconds;
 * else the embedded broker from the Apache Kafka jars.
 */
async function containerRuntimeAnswers(timeoutMs: number): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    const probe = getContainerRuntimeClient().then(() => true, () => false);
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
  if (await containerRuntimeAnswers(5000)) {
    const { KafkaContainer } = await import('@testcontainers/kafka');
    const container = await new KafkaContainer(CP_KAFKA_IMAGE).withKraft().start();
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
