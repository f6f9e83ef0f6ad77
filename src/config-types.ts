/**
 * The shape of the configuration loadConfig (config.ts) reads, validates and passes down; the variables, their
 * defaults and bounds are there.
 */

export type Role = 'all' | 'api' | 'runner' | 'bridge';
export const ROLES: readonly Role[] = ['all', 'api', 'runner', 'bridge'];
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface ApiKeys {
  /** api key → tenant */
  readonly byKey: ReadonlyMap<string, string>;
  /** true when no API_KEYS was set and a development key was generated */
  readonly generated: boolean;
}

export interface CallbackConfig {
  allowPrivate: boolean;
  timeoutMs: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  concurrency: number;
  /** callbacks one subscription's lane holds in memory; the rest are read again from Kafka (at most concurrency) */
  laneBuffer: number;
}

/** Bounds on what one HTTP client can hold: slow headers and bodies, idle sockets, connections. */
export interface HttpLimits {
  /** the whole request, headers and body, must arrive within this (408 after) */
  requestTimeoutMs: number;
  /** the headers must arrive within this (408 after); at most requestTimeoutMs */
  headersTimeoutMs: number;
  /** an idle keep-alive connection is closed after this */
  keepAliveTimeoutMs: number;
  /** a connection silent both ways this long is closed: receiving, plus the longest a handler waits for Kafka */
  idleTimeoutMs: number;
  /** further connections are dropped at once */
  maxConnections: number;
}

export interface Config {
  port: number;
  host: string;
  /** undefined → start the embedded local broker, where embeddedKafka allows it */
  kafkaBrokers: string[] | undefined;
  /** false where no Java is meant to be (the image): then KAFKA_BROKERS is required */
  embeddedKafka: boolean;
  tracing: TracingConfig;
  topicPrefix: string;
  topicPartitions: number;
  apiKeys: ApiKeys;
  role: Role;
  logLevel: LogLevel;
  /** where the embedded broker's jars, data and logs live (outside the repo) */
  cacheDir: string;
  /** bound on any request that needs Kafka before it answers 503 */
  kafkaTimeoutMs: number;
  /** how long start-up waits for Kafka to be usable; the embedded broker's JVM start gets as long again */
  kafkaStartupTimeoutMs: number;
  bodyLimitBytes: number;
  /** tasks one runner process runs at once */
  taskConcurrency: number;
  /** a run taking longer fails with task-timed-out, unless its type sets its own limit */
  taskTimeoutMs: number;
  callbacks: CallbackConfig;
  http: HttpLimits;
  /** finished tasks are forgotten (tombstoned) this long after they finished */
  taskRetentionMs: number;
  /** base of callback bodies' links (unset: relative) and of absolute hrefs naming ours (unset: the listen address) */
  publicUrl: string | undefined;
  /** a task's event stream (SSE) sends a comment at least this often while waiting */
  eventsHeartbeatMs: number;
}

/** OpenTelemetry trace export, from the standard OTEL_* variables; `url` undefined: no export. */
export interface TracingConfig {
  url?: string;
  headers: Record<string, string>;
  serviceName: string;
}
