import { Kafka, logLevel, type LogEntry } from 'kafkajs';
import type { Logger } from '../logger';

export interface KafkaClientOptions {
  brokers: string[];
  clientId: string;
  timeoutMs: number;
  logger: Logger;
}

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/*
 * kafkajs logs every retried coordinator error at ERROR, which is routine while
 * a broker starts or a group rebalances; it is demoted to debug so operators
 * see real failures, which surface as rejected calls and readiness instead.
 */
function kafkajsLogCreator(logger: Logger) {
  const log = logger.child({ component: 'kafkajs' });
  return () =>
    ({ level, log: entry }: LogEntry) => {
      const { message, ...rest } = entry;
      const target = level === logLevel.ERROR || level === logLevel.WARN ? 'debug' : (LEVELS[level] ?? 'debug');
      log[target](rest, message);
    };
}

export function createKafkaClient(options: KafkaClientOptions): Kafka {
  return new Kafka({
    clientId: options.clientId,
    brokers: options.brokers,
    connectionTimeout: Math.min(3000, options.timeoutMs),
    requestTimeout: Math.max(options.timeoutMs, 5000),
    logLevel: logLevel.WARN,
    logCreator: kafkajsLogCreator(options.logger),
    retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: 5 },
  });
}
