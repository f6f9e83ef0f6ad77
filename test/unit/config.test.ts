import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_VARIABLES, ConfigError, loadConfig } from '../../src/config';

describe('configuration', () => {
  test('defaults apply when nothing is set, with a generated dev key', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      kafkaBrokers: undefined,
      topicPrefix: 'hookstream.',
      role: 'all',
      logLevel: 'info',
    });
    expect(c.callbacks.allowPrivate).toBe(false);
    expect(c.apiKeys.generated).toBe(true);
    expect([...c.apiKeys.byKey.values()]).toEqual(['dev']);
  });

  test('API_KEYS maps keys to tenants', () => {
    const c = loadConfig({ API_KEYS: 'acme:0123456789abcdef01,globex:fedcba9876543210fe' });
    expect(c.apiKeys.byKey.get('0123456789abcdef01')).toBe('acme');
    expect(c.apiKeys.byKey.get('fedcba9876543210fe')).toBe('globex');
    expect(c.apiKeys.generated).toBe(false);
  });

  test('every bad value is reported at once, by name', () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: '70000',
        KAFKA_BROKERS: 'nohost',
        ROLE: 'chef',
        CALLBACK_ALLOW_PRIVATE: 'maybe',
        API_KEYS: 'short:key',
        LOG_LEVEL: 'loud',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as ConfigError).problems.join('\n');
    for (const name of ['PORT', 'KAFKA_BROKERS', 'ROLE', 'CALLBACK_ALLOW_PRIVATE', 'API_KEYS', 'LOG_LEVEL'])
      expect(text).toContain(name);
  });

  test('a bad API_KEYS entry is named by its place and tenant, never by its key, with the limits', () => {
    const problems = (keys: string) => {
      try {
        loadConfig({ API_KEYS: keys });
      } catch (e) {
        return (e as ConfigError).problems;
      }
      return [];
    };
    const secret = 'has a space inside it';
    const [named] = problems(`acme:0123456789abcdef01,globex:${secret}`);
    expect(named).toContain('API_KEYS entry 2 of 2 (tenant globex)');
    expect(named).toContain('16-256');
    expect(named).not.toContain(secret);
    expect(problems('no-colon-here-0123456789')[0]).toContain('API_KEYS entry 1 of 1 must');
    expect(problems(`acme:${'k'.repeat(257)}`)[0]).toContain('entry 1 of 1 (tenant acme)');
  });

  test('a role given on the command line overrides ROLE', () => {
    expect(loadConfig({ ROLE: 'api' }, 'runner').role).toBe('runner');
  });

  test('KAFKA_BROKERS accepts a list of host:port', () => {
    expect(loadConfig({ KAFKA_BROKERS: 'kafka:9092, 10.0.0.1:19092' }).kafkaBrokers).toEqual([
      'kafka:9092',
      '10.0.0.1:19092',
    ]);
  });

  test('a KAFKA_BROKERS port outside 1-65535 is a configuration error, not a crash at the first connect', () => {
    for (const bad of ['127.0.0.1:99999', 'kafka:0', '[::1]:70000']) {
      expect(() => loadConfig({ KAFKA_BROKERS: bad })).toThrow(/KAFKA_BROKERS entry .* the port from 1 to 65535/);
    }
    expect(loadConfig({ KAFKA_BROKERS: '[::1]:65535' }).kafkaBrokers).toEqual(['[::1]:65535']);
  });

  test('KAFKA_STARTUP_TIMEOUT_MS: 120 s by default, an integer from 1000, read and documented', () => {
    expect(loadConfig({}).kafkaStartupTimeoutMs).toBe(120000);
    expect(loadConfig({ KAFKA_STARTUP_TIMEOUT_MS: '3000' }).kafkaStartupTimeoutMs).toBe(3000);
    for (const bad of ['999', '2.5', 'soon', '-1']) {
      expect(() => loadConfig({ KAFKA_STARTUP_TIMEOUT_MS: bad })).toThrow(/KAFKA_STARTUP_TIMEOUT_MS/);
    }
    expect(CONFIG_VARIABLES).toContain('KAFKA_STARTUP_TIMEOUT_MS');
    const readme = readFileSync(join(__dirname, '../../README.md'), 'utf8');
    expect(readme).toMatch(/^\| `KAFKA_STARTUP_TIMEOUT_MS` \|.*\| `120000` \|$/m);
  });
  test('EVENTS_HEARTBEAT_MS never reaches half the idle limit, so a waiting stream is not closed as idle', () => {
    expect(loadConfig({}).eventsHeartbeatMs).toBe(15000);
    expect(loadConfig({ EVENTS_HEARTBEAT_MS: '500' }).eventsHeartbeatMs).toBe(500);
    // idle = 2000 + 1000 + 5000 ms: a 15 s heartbeat would come after the socket was closed
    const short = { HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_HEADERS_TIMEOUT_MS: '1000', KAFKA_TIMEOUT_MS: '1000' };
    const c = loadConfig(short);
    expect(c.http.idleTimeoutMs).toBe(8000);
    expect(c.eventsHeartbeatMs).toBe(4000);
  });

  test('CALLBACK_LANE_BUFFER: 100 by default, never above CALLBACK_CONCURRENCY, read and documented', () => {
    expect(loadConfig({}).callbacks.laneBuffer).toBe(100);
    expect(loadConfig({ CALLBACK_CONCURRENCY: '10' }).callbacks.laneBuffer).toBe(10);
    expect(loadConfig({ CALLBACK_LANE_BUFFER: '5' }).callbacks.laneBuffer).toBe(5);
    for (const bad of ['0', '1.5', 'many']) {
      expect(() => loadConfig({ CALLBACK_LANE_BUFFER: bad })).toThrow(/CALLBACK_LANE_BUFFER/);
    }
    expect(() => loadConfig({ CALLBACK_CONCURRENCY: '10', CALLBACK_LANE_BUFFER: '11' })).toThrow(
      /CALLBACK_LANE_BUFFER/,
    );
    expect(CONFIG_VARIABLES).toContain('CALLBACK_LANE_BUFFER');
    const readme = readFileSync(join(__dirname, '../../README.md'), 'utf8');
    expect(readme).toMatch(/^\| `CALLBACK_LANE_BUFFER` \|.*\| `100` \|$/m);
  });

  test('every variable the configuration reads is named in README', () => {
    const readme = readFileSync(join(__dirname, '../../README.md'), 'utf8');
    const unnamed = CONFIG_VARIABLES.filter((v) => !new RegExp(`\`${v}[\`=]`).test(readme));
    expect(unnamed).toEqual([]);
  });
});
