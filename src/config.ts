/**
 * The one place that reads the environment. Every setting is validated here,
 * defaults live here, and the result is passed down as a plain object.
 */

import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { ConfigError, EnvReader, type Env } from './config-reader';
import {
  LOG_LEVELS,
  ROLES,
  type ApiKeys,
  type Config,
  type HttpLimits,
  type LogLevel,
  type Role,
  type TracingConfig,
} from './config-types';

export { ConfigError, ROLES };
export type { ApiKeys, CallbackConfig, Config, HttpLimits, LogLevel, Role, TracingConfig } from './config-types';

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

function parseCallbacks(r: EnvReader): Config['callbacks'] {
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

function parseHttpLimits(r: EnvReader, kafkaTimeoutMs: number): HttpLimits {
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

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT's traces URL: `/v1/traces` appended to its path (the OTLP exporter specification),
 * not to the string: a query (a collector's key) stays a query.
 */
function tracesUrlOf(endpoint: string): string {
  if (!URL.canParse(endpoint)) return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
  const url = new URL(endpoint);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.href;
}

/**
 * A URL refused in a start-up message, without what may be a secret (the message goes to the log): its userinfo (up
 * to the last `@` before the path, scheme or none) and its query.
 */
const shown = (value: string | undefined) =>
  value?.replace(/^((?:[a-z][a-z0-9+.-]*:\/\/)?)[^/?#]*@/i, '$1[redacted]@').replace(/\?.*$/, '?[redacted]');

/**
 * Spans are exported only when asked: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set (and neither
 * OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none). Unasked, the SDK is never started.
 */
function parseTracing(r: EnvReader): TracingConfig {
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
  const url = tracesEndpoint ?? tracesUrlOf(endpoint ?? 'http://localhost:4318');
  // Unchecked, a bad one failed the start only once Kafka answered, with the exporter's stack trace.
  if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) {
    const name = tracesEndpoint !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
    const value = tracesEndpoint ?? endpoint;
    r.problems.push(`${name}=${JSON.stringify(shown(value))} must be an http(s) URL (http://collector:4318)`);
  }
  return { url, headers, serviceName };
}

function parseBrokers(r: EnvReader): string[] | undefined {
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

function parseApiKeys(r: EnvReader): ApiKeys {
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

function parsePublicUrl(r: EnvReader): string | undefined {
  const v = r.raw('PUBLIC_URL');
  if (v === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(v);
  } catch {
    url = undefined;
  }
  // The href, not search and hash: those are '' for an empty query or fragment, which the href keeps ('…/v2?').
  if (!url || !['http:', 'https:'].includes(url.protocol) || /[?#]/.test(url.href) || url.username || url.password) {
    r.problems.push(
      `PUBLIC_URL=${JSON.stringify(shown(v))} must be an absolute http(s) URL ` +
        'without query, fragment or credentials',
    );
    return undefined;
  }
  return url.href.replace(/\/+$/, '');
}

/** A DNS name (RFC 1123 labels, the last not all digits: RFC 3696 §2) or an IP literal, as Node's listen takes it. */
const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*(?!\d+$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

function parseHost(r: EnvReader): string {
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
  const r = new EnvReader(env);
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
