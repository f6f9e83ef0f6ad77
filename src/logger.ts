import pino, { type DestinationStream, type LevelWithSilent, type Logger } from 'pino';
import type { LogLevel } from './config';

export type { Logger };

/** Query parameters whose values are the API's own and never secret; every other value is redacted. */
const LOGGED_QUERY_VALUES = new Set(['fields', 'embedded', 'embed', 'offset', 'limit', 'type', 'status', 'atomic']);
/** API keys are at least 16 characters (config.ts), so a shorter plain name cannot be one. */
const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,14}$/;

/**
 * The URL as it may be logged. Clients put keys in query strings (`?api_key=`,
 * `?access_token=`, `?<key>`, any name at all), so only the API's own parameters
 * keep their values; others keep a short plain name at most.
 */
export function loggableUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = url
    .slice(q + 1)
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      if (LOGGED_QUERY_VALUES.has(name)) return pair;
      return PLAIN_NAME.test(name) ? `${name}=[redacted]` : '[redacted]';
    });
  return `${url.slice(0, q)}?${params.join('&')}`;
}

/**
 * An absolute URL of the service's own configuration (an OTLP collector's) as it may be logged: its credentials and,
 * as for requests, its query values are redacted; a collector's key may be in either.
 */
export function loggableEndpoint(url: string): string {
  if (!URL.canParse(url)) return '[not a URL]';
  const u = new URL(url);
  const credentials = u.username || u.password ? '[redacted]@' : '';
  return loggableUrl(`${u.protocol}//${credentials}${u.host}${u.pathname}${u.search}`);
}

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** Replaces Fastify's `req` serializer (pino's own serializers take precedence over Fastify's). */
function requestSerializer(req: LoggedRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? loggableUrl(req.url) : undefined,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/** `destination` defaults to stdout; tests pass a stream to read what was logged. */
export function createLogger(level: LogLevel, name = 'hookstream', destination?: DestinationStream): Logger {
  const options = { name, level, serializers: { req: requestSerializer } };
  return destination ? pino(options, destination) : pino(options);
}

const LEVEL_ORDER: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/**
 * The level for a route that should log less than the rest (health probes, metric scrapes): `floor`, or the
 * process's own level when that is stricter. A route's level replaces the process's, so a bare `warn` would make a
 * `LOG_LEVEL=silent` process write the route's warnings.
 */
export function quieterLevel(processLevel: string, floor: 'warn' | 'error'): LevelWithSilent {
  const own = LEVEL_ORDER.indexOf(processLevel as LevelWithSilent);
  return own > LEVEL_ORDER.indexOf(floor) ? LEVEL_ORDER[own] : floor;
}
