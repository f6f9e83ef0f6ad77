import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, DEFAULT_HTTP_LIMITS, loadConfig } from '../../src/config';
import { prepareCacheDir } from '../../src/embedded-kafka/cache-dir';
import { loggableEndpoint } from '../../src/logger';

/** The problems loadConfig reports for an environment, or [] when it is accepted. */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe('HTTP limits', () => {
  test('defaults; the idle bound covers a whole request plus the longest wait for Kafka', () => {
    const c = loadConfig({});
    expect(c.http).toEqual(DEFAULT_HTTP_LIMITS);
    const custom = loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '20000', KAFKA_TIMEOUT_MS: '3000' }).http;
    expect(custom.idleTimeoutMs - 20000 - 3000).toBe(DEFAULT_HTTP_LIMITS.idleTimeoutMs - 30000 - 5000);
  });

  test('the headers may not take longer than the whole request', () => {
    const problems = problemsOf({ HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' });
    expect(problems).toEqual(['HTTP_HEADERS_TIMEOUT_MS=20000 must not exceed HTTP_REQUEST_TIMEOUT_MS=10000']);
  });
});

describe('PUBLIC_URL', () => {
  test('an absolute http(s) URL, kept without its trailing slash', () => {
    expect(loadConfig({}).publicUrl).toBeUndefined();
    expect(loadConfig({ PUBLIC_URL: 'https://api.example.com/hookstream/' }).publicUrl).toBe(
      'https://api.example.com/hookstream',
    );
  });

  const refused = [
    'api.example.com',
    'ftp://api.example.com',
    'https://api.example.com/?x=1',
    // An empty query or fragment: URL's search and hash are '' for them, but the href keeps the '?' or '#', and every
    // link made of it (`<PUBLIC_URL>/tasks/…`) named the root with a query.
    'https://api.example.com/v2?',
    'https://api.example.com/v2#',
    'https://u:p@api.example.com',
  ];
  test.each(refused)('%s is refused, by name', (value) => {
    expect(problemsOf({ PUBLIC_URL: value })).toEqual([expect.stringMatching(/^PUBLIC_URL=/)]);
  });

  test('the credentials of a refused URL are not repeated in the message (it goes to the log)', () => {
    expect(problemsOf({ PUBLIC_URL: 'https://admin:s3cret@api.example.com' })).toEqual([
      'PUBLIC_URL="https://[redacted]@api.example.com" must be an absolute http(s) URL ' +
        'without query, fragment or credentials',
    ]);
    const [atSign] = problemsOf({ PUBLIC_URL: 'https://admin:p@ss@api.example.com' });
    expect(atSign).toMatch(/^PUBLIC_URL="https:\/\/\[redacted\]@api\.example\.com" /);
    const [query] = problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317/?api-key=S3CRET' });
    expect(query).toMatch(/^OTEL_EXPORTER_OTLP_ENDPOINT="grpc:\/\/collector:4317\/\?\[redacted\]" must be/);
    const [bare] = problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'otel:s3cret@collector:4318' });
    expect(bare).not.toContain('s3cret');
    const [told] = problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://otel:s3cret@collector:4318' });
    expect(told).toMatch(/^OTEL_EXPORTER_OTLP_ENDPOINT="ftp:\/\/\[redacted\]@collector:4318" must be/);
  });
});

describe('HOST', () => {
  test.each(['0.0.0.0', '::', '127.0.0.1', 'localhost', 'api.example.com', 'host-1'])('%s is taken', (host) => {
    expect(loadConfig({ HOST: host }).host).toBe(host);
  });
  test.each(['999.1.1.1', 'a b', 'http://x', '-bad', 'x..y', '[::1]'])('%s is refused, by name', (host) => {
    expect(problemsOf({ HOST: host })).toEqual([expect.stringMatching(/^HOST=/)]);
  });
});

describe('tracing (OTEL_*)', () => {
  test('unasked, nothing is exported', () => {
    expect(loadConfig({}).tracing).toEqual({ headers: {}, serviceName: 'hookstream' });
  });

  test('an OTLP endpoint asks for export, to its /v1/traces; a traces endpoint is used as given', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing.url).toBe(
      'http://collector:4318/v1/traces',
    );
    const both = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b/traces',
    };
    expect(loadConfig(both).tracing.url).toBe('http://b/traces');
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).tracing.url).toBe('http://localhost:4318/v1/traces');
  });

  test("/v1/traces goes after the endpoint's path, not after its query (a collector's key)", () => {
    const endpoint = 'https://collector.example.com/otlp/?api-key=K1';
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }).tracing.url).toBe(
      'https://collector.example.com/otlp/v1/traces?api-key=K1',
    );
  });

  test('a collector URL is logged without its credentials or query values', () => {
    expect(loggableEndpoint('http://otuser:PW@127.0.0.1:3357/v1/traces?api-key=K1&fields=a')).toBe(
      'http://[redacted]@127.0.0.1:3357/v1/traces?api-key=[redacted]&fields=a',
    );
    expect(loggableEndpoint('http://collector:4318/v1/traces')).toBe('http://collector:4318/v1/traces');
  });

  test('malformed OTEL_EXPORTER_OTLP_HEADERS is refused by name, without repeating its value', () => {
    expect(problemsOf({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%zzsecret' })).toEqual([
      expect.stringMatching(/^OTEL_EXPORTER_OTLP_HEADERS must be/),
    ]);
    expect(problemsOf({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%zzsecret' })[0]).not.toContain('secret');
  });

  test('OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turn it off; another exporter is refused', () => {
    const none = { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a' };
    expect(loadConfig(none).tracing.url).toBeUndefined();
    expect(loadConfig({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }).tracing.url).toBeUndefined();
    expect(problemsOf({ OTEL_TRACES_EXPORTER: 'zipkin' })).toEqual([
      'OTEL_TRACES_EXPORTER="zipkin" must be otlp or none',
    ]);
  });

  test('an endpoint that is no http(s) URL is refused by name at start, not when the exporter first sends', () => {
    expect(problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'notaurl' })).toEqual([
      'OTEL_EXPORTER_OTLP_ENDPOINT="notaurl" must be an http(s) URL (http://collector:4318)',
    ]);
    expect(problemsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://collector/v1/traces' })).toEqual([
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="ftp://collector/v1/traces" must be an http(s) URL (http://collector:4318)',
    ]);
    // Not asked for (turned off), it is not checked: nothing will use it.
    expect(problemsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'notaurl', OTEL_SDK_DISABLED: 'true' })).toEqual([]);
  });

  test('headers are comma-separated key=value pairs, URL-decoded; the service name is configurable', () => {
    const c = loadConfig({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc, x-team = core,broken',
      OTEL_SERVICE_NAME: 'hookstream-eu',
    });
    expect(c.tracing).toMatchObject({
      headers: { authorization: 'Bearer abc', 'x-team': 'core' },
      serviceName: 'hookstream-eu',
    });
  });
});

describe('callback backoff and names of levels', () => {
  test('the backoff base may not exceed its cap', () => {
    const problems = problemsOf({ CALLBACK_BACKOFF_BASE_MS: '60000', CALLBACK_BACKOFF_MAX_MS: '5000' });
    expect(problems).toEqual(['CALLBACK_BACKOFF_BASE_MS=60000 must not exceed CALLBACK_BACKOFF_MAX_MS=5000']);
    expect(loadConfig({ CALLBACK_BACKOFF_BASE_MS: '5000', CALLBACK_BACKOFF_MAX_MS: '5000' }).callbacks).toMatchObject({
      backoffBaseMs: 5000,
      backoffMaxMs: 5000,
    });
  });

  test('LOG_LEVEL and ROLE are read in any case; an unknown one is still refused', () => {
    const config = loadConfig({ LOG_LEVEL: 'DEBUG', ROLE: 'Bridge' });
    expect([config.logLevel, config.role]).toEqual(['debug', 'bridge']);
    expect(problemsOf({ LOG_LEVEL: 'LOUD' })).toEqual([
      'LOG_LEVEL="LOUD" must be one of fatal, error, warn, info, debug, trace, silent',
    ]);
  });
});

describe('the cache folder (HOOKSTREAM_CACHE_DIR, XDG_CACHE_HOME)', () => {
  test('a folder that cannot be made or written is a configuration error naming the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookstream-cache-'));
    try {
      const file = join(dir, 'a-file');
      writeFileSync(file, '');
      for (const bad of [file, join(file, 'below'), '/proc/hookstream-nope/x']) {
        expect(() => prepareCacheDir(bad)).toThrow(ConfigError);
        expect(() => prepareCacheDir(bad)).toThrow(`HOOKSTREAM_CACHE_DIR=${JSON.stringify(bad)} must be a folder`);
      }
      const fresh = join(dir, 'one', 'two');
      prepareCacheDir(fresh);
      expect(statSync(fresh).isDirectory()).toBe(true);
      prepareCacheDir(fresh);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('XDG_CACHE_HOME counts only when absolute (XDG Base Directory): empty or relative is ~/.cache', () => {
    const home = join(homedir(), '.cache', 'hookstream');
    expect(loadConfig({ XDG_CACHE_HOME: '' }).cacheDir).toBe(home);
    expect(loadConfig({ XDG_CACHE_HOME: 'rel/cache' }).cacheDir).toBe(home);
    expect(loadConfig({ XDG_CACHE_HOME: '/var/cache/me' }).cacheDir).toBe('/var/cache/me/hookstream');
    expect(loadConfig({ XDG_CACHE_HOME: '/var/cache/me', HOOKSTREAM_CACHE_DIR: '/srv/hs' }).cacheDir).toBe('/srv/hs');
  });
});
