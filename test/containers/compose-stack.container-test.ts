import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { parse } from 'yaml';
import { APACHE_KAFKA_IMAGE } from '../../src/embedded-kafka/kafka-version';
import { http } from '../support/http';
import { freePort } from '../../src/lib/free-port';
import { engineEnv, must, root, run, skipReason, until } from './engine';
import { HealthTicker } from './health-ticker';

/*
 * The project's own docker-compose.yml and Dockerfile, run for real: Compose v1 (Debian's
 * docker-compose) on podman's Docker-compatible API, with the images the stack names (the
 * stand-ins of build-stand-ins.sh where no registry is reachable). run.sh starts the engine;
 * this file skips, and says why, when it cannot run.
 */
const PROJECT = 'hookstream-containers-test';
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true });
const nodeImage = /^FROM (\S+)/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'))?.[1] ?? 'node';
const apiKey = String(compose.services.api.environment.API_KEYS).split(',')[0].split(':')[1];
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const walkthrough =
  /<!-- walkthrough:start -->\s*```sh\n([\s\S]*?)```\s*<!-- walkthrough:end -->/.exec(readme)?.[1] ?? '';
const ROLES = ['api', 'runner', 'bridge'];
const KAFKA_VOLUME = `${PROJECT}_kafka-data`;
const anonymousVolumes: string[] = [];

const reason = skipReason([APACHE_KAFKA_IMAGE, nodeImage]);
if (reason) console.warn(`compose stack tests SKIPPED: ${reason}`);
const maybe = reason ? describe.skip : describe;

const ports = { api: 0, kafka: 0, receiver: 0 };
let env: NodeJS.ProcessEnv;
let ticker: HealthTicker;
let failed = false;

const COMPOSE = ['-p', PROJECT, '-f', 'docker-compose.yml', '-f', 'test/containers/compose.test.yml'];
const dc = (args: string[], timeoutMs = 300000) => must('docker-compose', [...COMPOSE, ...args], { env, timeoutMs });
const api = () => `http://127.0.0.1:${ports.api}`;
const call = (path: string, options: Parameters<typeof http>[2] = {}) => http(api(), path, { key: apiKey, ...options });
/** A link's path, whether the service writes it relative or absolute. */
const pathOf = (href: string) => new URL(href, api()).pathname + new URL(href, api()).search;

interface ContainerState {
  id: string;
  status: string;
  health: string;
  pid: number;
  restarts: number;
  exitCode: number;
}

/** One service's container as the engine sees it (podman's inspect has the health and restart count). */
async function state(service: string): Promise<ContainerState | undefined> {
  const ids = (
    await must('podman', [
      'ps',
      '-aq',
      '--no-trunc',
      '--filter',
      `label=com.docker.compose.project=${PROJECT}`,
      '--filter',
      `label=com.docker.compose.service=${service}`,
    ])
  )
    .split('\n')
    .filter(Boolean);
  if (ids.length === 0) return undefined;
  const format = [
    '{{.Id}}',
    '{{.State.Status}}',
    '{{.State.Health.Status}}',
    '{{.State.Pid}}',
    '{{.RestartCount}}',
    '{{.State.ExitCode}}',
  ].join('|');
  const fields = (await must('podman', ['inspect', '--format', format, ids[0]])).trim().split('|');
  const [id, status, health, pid, restarts, exitCode] = fields;
  return { id, status, health, pid: Number(pid), restarts: Number(restarts), exitCode: Number(exitCode) };
}

async function kafkaMounts(): Promise<Array<{ Type: string; Name: string; Destination: string }>> {
  const kafka = (await state('kafka')) as ContainerState;
  return JSON.parse(await must('podman', ['inspect', '--format', '{{json .Mounts}}', kafka.id]));
}

async function allHealthy(timeoutMs: number): Promise<void> {
  await until(
    'kafka, api, runner and bridge healthy, topics exited 0',
    async () => {
      const states = await Promise.all(['kafka', ...ROLES].map(state));
      const topics = await state('topics');
      const up = states.every((s) => s?.status === 'running' && s.health === 'healthy');
      return up && topics?.status === 'exited' && topics.exitCode === 0 ? true : undefined;
    },
    timeoutMs,
    2000,
  );
}

interface Callback {
  path: string;
  headers: Record<string, string>;
  body: string;
}
async function callbacks(): Promise<Callback[]> {
  const res = await fetch(`http://127.0.0.1:${ports.receiver}/received`);
  return (await res.json()) as Callback[];
}

async function finished(taskId: string): Promise<{ status: string; result?: unknown }> {
  return until(
    `task ${taskId} to finish`,
    async () => {
      const res = await call(`/tasks/${taskId}?fields=status,result`);
      return ['succeeded', 'failed', 'cancelled'].includes(res.body?.status) ? res.body : undefined;
    },
    60000,
    500,
  );
}

/** A test that also notes its failure, so that afterAll shows the services' logs. */
function step(name: string, fn: () => Promise<void>, timeoutMs?: number): void {
  test(
    name,
    async () => {
      try {
        await fn();
      } catch (err) {
        failed = true;
        throw err;
      }
    },
    timeoutMs,
  );
}

// What was created before `down`, to be found again after `up`.
const kept = { tasks: [] as string[], orders: [] as string[], subscriptions: [] as string[] };
let continuousSecret = '';

maybe('docker-compose.yml on a real container engine', () => {
  beforeAll(async () => {
    [ports.api, ports.kafka, ports.receiver] = [await freePort(), await freePort(), await freePort()];
    env = engineEnv({
      HOOKSTREAM_API_PORT: String(ports.api),
      HOOKSTREAM_KAFKA_PORT: String(ports.kafka),
      HOOKSTREAM_RECEIVER_PORT: String(ports.receiver),
      HOOKSTREAM_NODE_IMAGE: nodeImage,
    });
    // A run that died before its cleanup left these behind.
    await run('docker-compose', [...COMPOSE, 'down', '-v'], { env });
    ticker = new HealthTicker(PROJECT);
    ticker.start();
  }, 120000);

  afterAll(async () => {
    ticker?.stop();
    if (failed) {
      const logs = await run('docker-compose', [...COMPOSE, 'logs', '--no-color', '--tail', '40'], { env });
      console.log(`compose logs (last 40 lines per service):\n${logs.stdout}`);
    }
    await run('docker-compose', [...COMPOSE, 'down', '-v'], { env, timeoutMs: 180000 });
    if (anonymousVolumes.length > 0) await run('podman', ['volume', 'rm', '--force', ...anonymousVolumes]);
  }, 240000);

  step(
    'the Dockerfile builds the image',
    async () => {
      const started = Date.now();
      await dc(['build', 'api'], 900000);
      console.log(`image hookstream:local built in ${Math.round((Date.now() - started) / 1000)} s`);
      const inspect = await must('podman', ['image', 'inspect', '--format', '{{json .Config}}', 'hookstream:local']);
      const config = JSON.parse(inspect) as { User: string; Entrypoint: string[]; Env: string[] };
      expect(config).toMatchObject({ User: 'node', Entrypoint: ['node', 'dist/src/main.js'] });
      expect(config.Env).toContain('NODE_ENV=production');
    },
    900000,
  );

  step(
    'the image run without KAFKA_BROKERS says to set it, not to install Java',
    async () => {
      const r = await run('podman', ['run', '--rm', 'hookstream:local', 'api'], { env, timeoutMs: 60000 });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('set KAFKA_BROKERS=host:port');
      expect(r.stderr).not.toMatch(/java|maven/i);
    },
    90000,
  );

  step(
    'up: Kafka becomes healthy, topics are created, then every role becomes healthy',
    async () => {
      const started = Date.now();
      await dc(['up', '-d'], 600000);
      await allHealthy(240000);
      console.log(`stack healthy ${Math.round((Date.now() - started) / 1000)} s after up`);
      const ready = await call('/health/ready', { key: null });
      expect({ status: ready.status, body: ready.body.status }).toEqual({ status: 200, body: 'ready' });
    },
    900000,
  );

  step('Kafka writes its log where the volume is mounted', async () => {
    const kafka = (await state('kafka')) as ContainerState;
    const props = await must('podman', ['exec', kafka.id, 'cat', '/opt/kafka/config/server.properties']);
    const logDirs = /^log\.dirs=(.*)$/m.exec(props)?.[1];
    const volume = { Type: 'volume', Name: KAFKA_VOLUME, Destination: logDirs };
    expect(await kafkaMounts()).toContainEqual(expect.objectContaining(volume));
    await must('podman', ['exec', kafka.id, 'test', '-f', `${logDirs}/meta.properties`]);
  });

  step(
    'the README walkthrough runs on the stack: a task over HTTP, its events with kafkajs and kcat',
    async () => {
      const r = await run('bash', ['-euo', 'pipefail', '-c', walkthrough], {
        env: { PATH: process.env.PATH ?? '', HOOKSTREAM: api(), KAFKA: `127.0.0.1:${ports.kafka}`, KEY: apiKey },
        timeoutMs: 120000,
      });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      const lines = r.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^\d+ task\.accepted \{"input":\{"steps":3,"stepMs":200\}\}$/);
      expect(lines).toContainEqual(expect.stringMatching(/^\d+ task\.succeeded \{"result":\{"steps":3\}\}$/));
      expect(r.stdout).toMatch(/^[\w-]+ \{"event":"task\.succeeded"/m); // kcat's line, through the published port
      expect(JSON.parse(lines.at(-1) as string)).toEqual({ status: 'succeeded', result: { steps: 3 } });
    },
    180000,
  );

  step(
    'callbacks reach a receiver on the compose network, signed per Standard Webhooks',
    async () => {
      const sub = await call('/subscriptions', {
        body: { callbackUrl: 'http://receiver:8080/orders', mode: 'continuous', events: ['order.created'] },
      });
      expect(sub.status).toBe(201);
      kept.subscriptions.push(sub.body.UUID);
      continuousSecret = sub.body.secret;
      const orders = await call('/orders', { body: { order: [{ orderNumber: 7, itemCount: 42, status: 'open' }] } });
      expect(orders.status).toBe(201);
      for (const o of orders.body._embedded.orders as Array<{ _links: { self: { href: string } } }>) {
        kept.orders.push(pathOf(o._links.self.href));
      }

      const task = await call('/tasks', {
        body: { type: 'countdown', input: { steps: 2, stepMs: 100 }, callbackUrl: 'http://receiver:8080/task' },
      });
      expect(task.status).toBe(202);
      kept.tasks.push(task.body.taskId);
      const taskSecret = task.body._embedded.subscription.secret as string;

      const got = await until(
        'a callback for the order and one for the task',
        async () => {
          const all = await callbacks();
          const order = all.find((c) => c.path === '/orders');
          const done = all.find((c) => c.path === '/task');
          return order && done ? { order, done } : undefined;
        },
        60000,
        500,
      );
      const verify = (secret: string, c: Callback) =>
        new Webhook(secret).verify(c.body, {
          'webhook-id': c.headers['webhook-id'],
          'webhook-timestamp': c.headers['webhook-timestamp'],
          'webhook-signature': c.headers['webhook-signature'],
        });
      expect(verify(continuousSecret, got.order)).toMatchObject({ event: 'order.created', UUID: sub.body.UUID });
      expect(verify(taskSecret, got.done)).toMatchObject({
        event: 'task.succeeded',
        taskId: task.body.taskId,
        data: { result: { steps: 2 } },
      });
    },
    120000,
  );

  step(
    'a role container killed by a signal is restarted by its restart policy and works again',
    async () => {
      const before = (await state('runner')) as ContainerState;
      // SIGKILL to the container's process from the host, as a crash or the OOM killer would:
      // `podman kill` (like `docker stop`) counts as a user's stop, after which no policy restarts it.
      process.kill(before.pid, 'SIGKILL');
      const after = await until(
        'the runner to be restarted',
        async () => {
          const s = await state('runner');
          return s && s.restarts > before.restarts && s.status === 'running' && s.pid !== before.pid ? s : undefined;
        },
        60000,
        500,
      );
      expect(after.id).toBe(before.id);
      await allHealthy(120000);
      const task = await call('/tasks', { body: { type: 'countdown', input: { steps: 2, stepMs: 50 } } });
      kept.tasks.push(task.body.taskId);
      expect(await finished(task.body.taskId)).toMatchObject({ status: 'succeeded', result: { steps: 2 } });
    },
    240000,
  );

  step(
    'down, then up: every task, resource and subscription is still there; subscriptions deliver',
    async () => {
      const tasksBefore = await Promise.all(kept.tasks.map(finished));
      const ordersBefore = await Promise.all(kept.orders.map(async (p) => (await call(p)).body));
      // `down` without -v leaves the anonymous volumes of the image's other VOLUMEs: removed in afterAll.
      anonymousVolumes.push(
        ...(await kafkaMounts()).filter((m) => m.Type === 'volume' && m.Name !== KAFKA_VOLUME).map((m) => m.Name),
      );
      await dc(['down'], 300000);
      expect(await state('kafka')).toBeUndefined();
      await must('podman', ['volume', 'exists', KAFKA_VOLUME]);

      await dc(['up', '-d'], 600000);
      await allHealthy(240000);
      expect(await Promise.all(kept.tasks.map(finished))).toEqual(tasksBefore);
      for (const [i, p] of kept.orders.entries()) {
        const res = await call(p);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ orderNumber: ordersBefore[i].orderNumber, itemCount: 42, status: 'open' });
      }
      for (const id of kept.subscriptions) {
        const sub = (await call(`/subscriptions/${id}`)).body;
        expect(sub).toMatchObject({ UUID: id, status: 'active', mode: 'continuous' });
      }
      // The receiver is a new container with nothing recorded; the kept subscription delivers to it.
      // A 503 (Kafka not ready for this write yet) is retried, as its Retry-After tells a client to.
      let unavailable = 0;
      const created = await until(
        'POST /orders to be accepted after up',
        async () => {
          const res = await call('/orders', { body: { order: [{ orderNumber: 8, itemCount: 1, status: 'open' }] } });
          if (res.status === 503) unavailable += 1;
          else expect(res.status).toBe(201);
          return res.status === 201 ? res : undefined;
        },
        60000,
        1000,
      );
      if (unavailable > 0) console.log(`the first write after up was answered 503 ${unavailable} time(s) before 201`);
      const href = pathOf(created.body._embedded.orders[0]._links.self.href);
      const after = await until(
        'a callback for an order created after up',
        async () => {
          const all = await callbacks();
          return all.find(
            (c) => c.path === '/orders' && pathOf(JSON.parse(c.body)._links?.resource?.href ?? '/') === href,
          );
        },
        90000,
        500,
      );
      expect(JSON.parse(after.body)).toMatchObject({ event: 'order.created', UUID: kept.subscriptions[0] });
    },
    900000,
  );
});
