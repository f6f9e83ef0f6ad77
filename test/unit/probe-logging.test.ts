import { quieterLevel } from '../../src/logger';
import { Metrics } from '../../src/metrics/metrics';
import { capturedLogger } from './fakes';
import { call, inMemoryApi } from './in-memory-api';

/** Health probes and metric scrapes come every few seconds; a request log line each would bury the rest. */
test('probes and scrapes log no request lines; other routes do', async () => {
  const { logger, lines } = capturedLogger();
  logger.level = 'info';
  const { app } = await inMemoryApi({ logger, metrics: new Metrics(() => []) });
  try {
    for (const path of ['/health', '/health/live', '/health/ready', '/metrics']) {
      expect([path, (await call(app, path, { key: null })).status]).toEqual([path, 200]);
    }
    expect(lines.filter((l) => l.reqId !== undefined)).toEqual([]);
    expect((await call(app, '/', { key: null })).status).toBe(200);
    const logged = lines.filter((l) => l.reqId !== undefined).map((l) => l.msg);
    expect(logged).toEqual(['request completed']);
    expect(lines.find((l) => l.reqId !== undefined)).toMatchObject({
      req: { method: 'GET', url: '/' },
      res: { statusCode: 200 },
    });
  } finally {
    await app.close();
  }
});

test('a probe route never logs more than the process: a silent process stays silent when Kafka is down', async () => {
  const { logger, lines } = capturedLogger();
  logger.level = 'silent';
  const { app } = await inMemoryApi({ logger, readiness: { kafkaReachable: () => false, viewsCaughtUp: () => true } });
  try {
    expect((await call(app, '/health/ready', { key: null })).status).toBe(503);
    expect(lines).toEqual([]);
  } finally {
    await app.close();
  }
});

test('quieterLevel: the floor, or the process level when that is stricter', () => {
  expect(['debug', 'info', 'warn', 'error', 'silent'].map((l) => quieterLevel(l, 'warn'))).toEqual([
    'warn',
    'warn',
    'warn',
    'error',
    'silent',
  ]);
});
