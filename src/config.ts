import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/**
 * The one place that reads the environment. Every setting is validated here,
 * defaults live here, and the result is passed down as a plain object.
 */

export type Role = 'all' | 'api' | 'runner' | 'bridge';
export const ROLES: readonly Role[] = ['all', 'api', 'runner', 'bridge'];
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
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

/** Slack on top of receiving and KAFKA_TIMEOUT_MS before a silent connection is closed. */
const IDLE_SLACK_MS = 5000;

/** The defaults, also for an app built without limits (tests); idle assumes the default KAFKA_TIMEOUT_MS. */
export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  requestTimeoutMs: 30000,
  headersTimeoutMs: 10000,
  keepAliveTimeoutMs: 72000,
  maxConnections: 10000,
  idleTimeoutMs: 30000 + 5000 + IDLE_SLACK_MS,
};

function parseCallbacks(r: Reader): Config['callbacks'] {
  const concurrency = r.int('CALLBACK_CONCURRENCY', 10000, 1, 1000000);
  const backoffBaseMs = r.int('CALLBACK_BACKOFF_BASE_MS', 1000, 1, 3600000);
  const backoffMaxMs = r.int('CALLBACK_BACKOFF_MAX_MS', 300000, 1, 86400000);
  // A base above the cap would make every retry wait the cap: surely not what was meant.
  if (backoffBaseMs > backoffMaxMs) {
    r.problems.push(
      `CALLBACK_BACKOFF_BASE_MS=${backoffBaseMs} must not exceed CALLBACK_BACKOFF_MAX_MS=${backoffMaxMs}`,
    );
  }
  return {
    allowPrivate: r.bool('CALLBACK_ALLOW_PRIVATE', false),
    timeoutMs: r.int('CALLBACK_TIMEOUT_MS', 10000, 100, 120000),
    maxAttempts: r.int('CALLBACK_MAX_ATTEMPTS', 8, 1, 100),
    backoffBaseMs,
    backoffMaxMs,
    concurrency,
    laneBuffer: r.int('CALLBACK_LANE_BUFFER', Math.min(100, concurrency), 1, concurrency),
  };
}

function parseHttpLimits(r: Reader, kafkaTimeoutMs: number): HttpLimits {
  const d = DEFAULT_HTTP_LIMITS;
  const requestTimeoutMs = r.int('HTTP_REQUEST_TIMEOUT_MS', d.requestTimeoutMs, 100, 3600000);
  const headersTimeoutMs = r.int('HTTP_HEADERS_TIMEOUT_MS', d.headersTimeoutMs, 100, 3600000);
  if (headersTimeoutMs > requestTimeoutMs) {
    r.problems.push(
      `HTTP_HEADERS_TIMEOUT_MS=${headersTimeoutMs} must not exceed ` + `HTTP_REQUEST_TIMEOUT_MS=${requestTimeoutMs}`,
    );
  }
  return {
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs: r.int('HTTP_KEEP_ALIVE_TIMEOUT_MS', d.keepAliveTimeoutMs, 100, 3600000),
    idleTimeoutMs: requestTimeoutMs + kafkaTimeoutMs + IDLE_SLACK_MS,
    maxConnections: r.int('HTTP_MAX_CONNECTIONS', d.maxConnections, 1, 1000000),
  };
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

/**
 * Spans are exported only when asked: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set (and neither
 * OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none). Unasked, the SDK is never started.
 */
function parseTracing(r: Reader): TracingConfig {
  const exporter = r.raw('OTEL_TRACES_EXPORTER')?.toLowerCase();
  const tracesEndpoint = r.raw('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = r.raw('OTEL_EXPORTER_OTLP_ENDPOINT');
  const headers: Record<string, string> = {};
  for (const pair of (r.raw('OTEL_EXPORTER_OTLP_HEADERS') ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      // The value may be a credential: the message names the variable, not what it holds.
      r.problems.push('OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs, percent-encoded (a % escape is malformed)');
      break;
    }
  }
  const serviceName = r.string('OTEL_SERVICE_NAME', 'hookstream');
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none') {
    r.problems.push(`OTEL_TRACES_EXPORTER=${JSON.stringify(exporter)} must be otlp or none`);
  }
  const asked = exporter === 'otlp' || (exporter === undefined && (tracesEndpoint ?? endpoint) !== undefined);
  if (!asked || r.bool('OTEL_SDK_DISABLED', false)) return { headers, serviceName };
  const url = tracesEndpoint ?? `${(endpoint ?? 'http://localhost:4318').replace(/\/+$/, '')}/v1/traces`;
  // Unchecked, a bad one failed the start only once Kafka answered, with the exporter's stack trace.
  if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) {
    const name = tracesEndpoint !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
    const value = tracesEndpoint ?? endpoint;
    r.problems.push(`${name}=${JSON.stringify(value)} must be an http(s) URL (http://collector:4318)`);
  }
  return { url, headers, serviceName };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  string(name: string, fallback: string, pattern?: RegExp): string {
    const v = this.raw(name) ?? fallback;
    if (pattern && !pattern.test(v)) this.problems.push(`${name}=${JSON.stringify(v)} must match ${pattern}`);
    return v;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^-?\d+$/.test(v) || n < min || n > max) {
      this.problems.push(`${name}=${JSON.stringify(v)} must be an integer from ${min} to ${max}`);
      return fallback;
    }
    return n;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['true', '1', 'yes'].includes(v)) return true;
    if (['false', '0', 'no'].includes(v)) return false;
    this.problems.push(`${name}=${JSON.stringify(v)} must be true or false`);
    return fallback;
  }

  /** The allowed values are lower case; `INFO` means `info`, as most services read it. */
  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[], override?: string): T {
    const given = override ?? this.raw(name) ?? fallback;
    const v = given.toLowerCase();
    if (!(allowed as readonly string[]).includes(v)) {
      this.problems.push(`${name}=${JSON.stringify(given)} must be one of ${allowed.join(', ')}`);
      return fallback;
    }
    return v as T;
  }
}

function parseBrokers(r: Reader): string[] | undefined {
  const v = r.raw('KAFKA_BROKERS');
  if (v === undefined) return undefined;
  const brokers = v
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  for (const b of brokers) {
    const port = /^[A-Za-z0-9._-]+:(\d{1,5})$|^\[[0-9a-fA-F:]+\]:(\d{1,5})$/.exec(b);
    const n = port ? Number(port[1] ?? port[2]) : NaN;
    if (!(n >= 1 && n <= 65535)) {
      r.problems.push(`KAFKA_BROKERS entry ${JSON.stringify(b)} must be host:port, the port from 1 to 65535`);
    }
  }
  if (brokers.length === 0) r.problems.push('KAFKA_BROKERS must list at least one host:port');
  return brokers;
}

function parseApiKeys(r: Reader): ApiKeys {
  const v = r.raw('API_KEYS');
  if (v === undefined) {
    return { byKey: new Map([[`dev-${randomBytes(18).toString('base64url')}`, 'dev']]), generated: true };
  }
  const byKey = new Map<string, string>();
  const pairs = v
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  pairs.forEach((pair, n) => {
    const i = pair.indexOf(':');
    const tenant = pair.slice(0, i);
    const key = pair.slice(i + 1);
    const tenantOk = i > 0 && /^[A-Za-z0-9._-]{1,64}$/.test(tenant);
    if (!tenantOk || !/^[\x21-\x7e]{16,256}$/.test(key)) {
      // Named by its place and, when it reads as one, its tenant: never by what it holds, which may be a key.
      const entry = `API_KEYS entry ${n + 1} of ${pairs.length}${tenantOk ? ` (tenant ${tenant})` : ''}`;
      r.problems.push(
        `${entry} must be tenant:key; tenant 1-64 of [A-Za-z0-9._-], key 16-256 printable ASCII characters ` +
          'without spaces (pairs separated by commas)',
      );
      return;
    }
    if (byKey.has(key)) r.problems.push(`API_KEYS lists one key twice (tenant ${tenant})`);
    byKey.set(key, tenant);
  });
  if (byKey.size === 0) r.problems.push('API_KEYS is set but holds no key');
  return { byKey, generated: false };
}

function parsePublicUrl(r: Reader): string | undefined {
  const v = r.raw('PUBLIC_URL');
  if (v === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(v);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.search || url.hash || url.username || url.password) {
    r.problems.push(
      `PUBLIC_URL=${JSON.stringify(v)} must be an absolute http(s) URL ` + 'without query, fragment or credentials',
    );
    return undefined;
  }
  return url.href.replace(/\/+$/, '');
}

/** A DNS name (RFC 1123 labels, the last not all digits: RFC 3696 §2) or an IP literal, as Node's listen takes it. */
const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*(?!\d+$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

function parseHost(r: Reader): string {
  const host = r.string('HOST', '0.0.0.0');
  if (isIP(host) === 0 && !HOST_NAME.test(host)) {
    r.problems.push(`HOST=${JSON.stringify(host)} must be an IP address (0.0.0.0, ::, 127.0.0.1) or a host name`);
  }
  return host;
}

/** XDG Base Directory: a relative or empty XDG_CACHE_HOME is invalid and ignored (else ~/.cache). */
function xdgCacheHome(env: Env): string {
  const xdg = env.XDG_CACHE_HOME;
  return xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.cache');
}

/** Reads and validates the configuration; throws ConfigError listing every bad setting at once. */
export function loadConfig(env: Env = process.env, roleOverride?: string): Config {
  const r = new Reader(env);
  const kafkaTimeoutMs = r.int('KAFKA_TIMEOUT_MS', 5000, 100, 120000);
  const http = parseHttpLimits(r, kafkaTimeoutMs);
  const config: Config = {
    port: r.int('PORT', 3000, 0, 65535),
    host: parseHost(r),
    kafkaBrokers: parseBrokers(r),
    embeddedKafka: r.bool('EMBEDDED_KAFKA', true),
    tracing: parseTracing(r),
    topicPrefix: r.string('TOPIC_PREFIX', 'hookstream.', /^[A-Za-z0-9._-]{1,100}$/),
    topicPartitions: r.int('TOPIC_PARTITIONS', 3, 1, 1000),
    apiKeys: parseApiKeys(r),
    role: r.oneOf<Role>('ROLE', 'all', ROLES, roleOverride),
    logLevel: r.oneOf<LogLevel>('LOG_LEVEL', 'info', LOG_LEVELS),
    cacheDir: r.string('HOOKSTREAM_CACHE_DIR', join(xdgCacheHome(env), 'hookstream')),
    kafkaTimeoutMs,
    kafkaStartupTimeoutMs: r.int('KAFKA_STARTUP_TIMEOUT_MS', 120000, 1000, 86400000),
    bodyLimitBytes: r.int('BODY_LIMIT_BYTES', 1048576, 1024, 104857600),
    taskConcurrency: r.int('TASK_CONCURRENCY', 128, 1, 10000),
    taskTimeoutMs: r.int('TASK_TIMEOUT_MS', 3600000, 100, 7 * 24 * 3600000),
    callbacks: parseCallbacks(r),
    http,
    taskRetentionMs: r.int('TASK_RETENTION_MS', 7 * 24 * 3600000, 1000, 3650 * 24 * 3600000),
    publicUrl: parsePublicUrl(r),
    // A stream's heartbeat is its only traffic while it waits: it must come before the idle limit closes the socket
    // (short HTTP timeouts make that limit shorter than the default heartbeat).
    eventsHeartbeatMs: Math.min(r.int('EVENTS_HEARTBEAT_MS', 15000, 100, 15000), Math.floor(http.idleTimeoutMs / 2)),
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return config;
}

/** The variables loadConfig reads; the docker-compose test checks compose only sets these. */
export const CONFIG_VARIABLES = [
  'PORT',
  'HOST',
  'KAFKA_BROKERS',
  'TOPIC_PREFIX',
  'TOPIC_PARTITIONS',
  'API_KEYS',
  'ROLE',
  'LOG_LEVEL',
  'HOOKSTREAM_CACHE_DIR',
  'XDG_CACHE_HOME',
  'KAFKA_TIMEOUT_MS',
  'BODY_LIMIT_BYTES',
  'TASK_CONCURRENCY',
  'TASK_TIMEOUT_MS',
  'CALLBACK_ALLOW_PRIVATE',
  'CALLBACK_TIMEOUT_MS',
  'CALLBACK_MAX_ATTEMPTS',
  'CALLBACK_BACKOFF_BASE_MS',
  'CALLBACK_BACKOFF_MAX_MS',
  'CALLBACK_CONCURRENCY',
  'CALLBACK_LANE_BUFFER',
  'HTTP_REQUEST_TIMEOUT_MS',
  'HTTP_HEADERS_TIMEOUT_MS',
  'HTTP_KEEP_ALIVE_TIMEOUT_MS',
  'HTTP_MAX_CONNECTIONS',
  'KAFKA_STARTUP_TIMEOUT_MS',
  'TASK_RETENTION_MS',
  'PUBLIC_URL',
  'EVENTS_HEARTBEAT_MS',
  'EMBEDDED_KAFKA',
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_SDK_DISABLED',
] as const;
