import { CONSUMER_ROLES } from '../../consumers/roles';
import { exampleResources, exampleTaskTypes } from '../../src/examples';
import { randomBytes } from 'node:crypto';
import { loadConfig, type Config, type Role } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startService, type RunningService } from '../../src/service';
import { waitForKafka } from '../../src/startup/wait-for-kafka';
import { TENANT_A_KEY, TENANT_B_KEY } from './api-keys';

/** Re-exported: the integration tests import the keys from here. */
export { TENANT_A_KEY, TENANT_B_KEY };

export function testBrokers(): string[] {
  const brokers = process.env.KAFKA_BROKERS;
  if (!brokers) throw new Error('KAFKA_BROKERS is set by test/support/global-setup.ts');
  return brokers.split(',');
}

/** Unique per test file (or test), so tests never share topics or groups. */
export function uniquePrefix(name: string): string {
  return `t.${name}.${randomBytes(4).toString('hex')}.`;
}

export function testConfig(prefix: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    KAFKA_BROKERS: testBrokers().join(','),
    TOPIC_PREFIX: prefix,
    API_KEYS: `tenant-a:${TENANT_A_KEY},tenant-b:${TENANT_B_KEY}`,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    CALLBACK_ALLOW_PRIVATE: 'true',
    TOPIC_PARTITIONS: '3',
    ...env,
  });
}

/** What src/main.ts registers and runs: the example domain and task types, and every consumer role. */
export const EXAMPLE_SERVICE = { resources: exampleResources, taskTypes: exampleTaskTypes, consumers: CONSUMER_ROLES };

/**
 * Starts the service in this process as `main` does: patiently, so a first write that times out on a machine
 * whose cores are both busy is tried again instead of failing the test's setup.
 */
export async function startTestService(
  prefix: string,
  options: { role?: Role; env?: Record<string, string>; registers?: Partial<typeof EXAMPLE_SERVICE> } = {},
): Promise<RunningService> {
  const config = testConfig(prefix, options.env);
  const logger = createLogger(config.logLevel);
  const parts = { ...EXAMPLE_SERVICE, ...options.registers };
  return waitForKafka(() => startService({ config, brokers: testBrokers(), logger, role: options.role, ...parts }), {
    brokers: testBrokers(),
    timeoutMs: config.kafkaStartupTimeoutMs,
    signal: new AbortController().signal,
    logger,
    progress: () => undefined,
    discard: (service) => service.stop(),
  });
}
