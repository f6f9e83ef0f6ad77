import { ConfigError, loadConfig } from '../../src/config';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, uniquePrefix } from '../support/test-service';

/** Links in callback bodies are relative to the API root (DESIGN), or absolute on PUBLIC_URL where it is set. */
let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(() => receiver.stop());

type CallbackBody = { _links: Record<string, { href: string }>; UUID: string; taskId?: string };

async function finalCallback(service: RunningService): Promise<CallbackBody> {
  const before = receiver.received.length;
  const body = { type: 'countdown', input: { steps: 1, stepMs: 0 }, callbackUrl: `${receiver.url}/hook` };
  const res = await http(service.url, '/tasks', { body });
  expect(res.status).toBe(202);
  const got = await receiver.waitFor(before + 1);
  const cb = got.slice(before).find((r) => r.json.taskId === res.body.taskId);
  if (!cb) throw new Error('no callback for the task');
  return cb.json;
}

test('with PUBLIC_URL, callback links start with it and follow to the API', async () => {
  const env = { PUBLIC_URL: 'https://api.example.com/hookstream/' };
  const service = await startTestService(uniquePrefix('public-url'), { role: 'all', env });
  try {
    const body = await finalCallback(service);
    expect(body._links.self.href).toBe(`https://api.example.com/hookstream/subscriptions/${body.UUID}`);
    expect(body._links.task.href).toBe(`https://api.example.com/hookstream/tasks/${body.taskId}`);
  } finally {
    await service.stop();
  }
});

test('without PUBLIC_URL they are relative to the API root, as DESIGN draws them, and follow from it', async () => {
  const service = await startTestService(uniquePrefix('own-url'), { role: 'all' });
  try {
    const body = await finalCallback(service);
    expect(body._links.self.href).toBe(`/subscriptions/${body.UUID}`);
    expect(body._links.task.href).toBe(`/tasks/${body.taskId}`);
    const followed = await http(service.url, body._links.task.href);
    expect(followed.status).toBe(200);
    expect(followed.body.taskId).toBe(body.taskId);
  } finally {
    await service.stop();
  }
});

test('PUBLIC_URL must be an absolute http(s) URL; a trailing slash is dropped', () => {
  expect(loadConfig({ PUBLIC_URL: 'https://api.example.com/v1/' }).publicUrl).toBe('https://api.example.com/v1');
  expect(loadConfig({}).publicUrl).toBeUndefined();
  for (const bad of ['/relative', 'ftp://x.example', 'https://user:pw@x.example', 'https://x.example/?a=1']) {
    expect(() => loadConfig({ PUBLIC_URL: bad })).toThrow(ConfigError);
  }
});

test('TASK_RETENTION_MS accepts a few seconds and defaults to 7 days; EVENTS_HEARTBEAT_MS is at most 15 s', () => {
  expect(loadConfig({}).taskRetentionMs).toBe(7 * 24 * 3600 * 1000);
  expect(loadConfig({ TASK_RETENTION_MS: '2000' }).taskRetentionMs).toBe(2000);
  expect(() => loadConfig({ TASK_RETENTION_MS: '10' })).toThrow(ConfigError);
  expect(loadConfig({}).eventsHeartbeatMs).toBe(15000);
  expect(() => loadConfig({ EVENTS_HEARTBEAT_MS: '60000' })).toThrow(ConfigError);
});
