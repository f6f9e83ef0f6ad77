import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { javaMajorVersion } from '../../src/embedded-kafka/local-broker-jars';
import { startLocalBroker, type LocalBroker } from '../../src/embedded-kafka/local-broker';
import { createLogger } from '../../src/logger';
import { startService, type RunningService } from '../../src/service';
import { http } from '../support/http';
import { latestValue } from '../support/topic-contents';
import { EXAMPLE_SERVICE, testConfig, uniquePrefix } from '../support/test-service';

/*
 * Stops a real broker under a running api. The shared test broker must stay
 * up, so this test starts its own from the Apache Kafka jars; it needs Java
 * (as the embedded default does) and says so when there is none.
 */
const hasJava = (javaMajorVersion() ?? 0) >= 17;

/** The broker's JVM: LocalBroker's pid is the shell that watches it (src/embedded-kafka/broker-jvm.ts). */
function javaOf(watchdog: number): number {
  const children = readFileSync(`/proc/${watchdog}/task/${watchdog}/children`, 'utf8').trim().split(/\s+/);
  const java = children.find((c) => readFileSync(`/proc/${c}/comm`, 'utf8').trim() === 'java');
  if (!java) throw new Error(`no java process under ${watchdog}`);
  return Number(java);
}
const maybe = hasJava ? describe : describe.skip;
if (!hasJava)
  console.warn('kafka-outage test skipped: it starts its own broker from the Kafka jars, which needs Java 17+');

maybe('Kafka down under a running api', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hookstream-outage-'));
  const cacheDir = loadConfig({}).cacheDir;
  let broker: LocalBroker;
  let api: RunningService;

  beforeAll(async () => {
    broker = await startLocalBroker({ cacheDir, persistent: true, dataDir });
    const config = testConfig(uniquePrefix('outage'), { KAFKA_BROKERS: broker.bootstrap, KAFKA_TIMEOUT_MS: '3000' });
    api = await startService({
      config,
      brokers: [broker.bootstrap],
      logger: createLogger(config.logLevel),
      role: 'all',
      ...EXAMPLE_SERVICE,
    });
  }, 120000);

  /** Creates the order again and again until it is created or the deadline passes: the last answer's status. */
  async function writeOnceKafkaIsBack(order: object, deadline: number): Promise<number> {
    let status = 0;
    while (Date.now() < deadline) {
      status = (await http(api.url, '/orders', { body: order })).status;
      if (status === 201) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    return status;
  }

  afterAll(async () => {
    await api?.stop();
    await broker?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }, 60000);

  test('requests that need Kafka fail fast with 503, readiness says why, and the api recovers when Kafka returns', async () => {
    const order = { orderNumber: 1, itemCount: 1, status: 'open' };
    expect((await http(api.url, '/orders', { body: order })).status).toBe(201);
    const keyed = {
      body: { type: 'countdown', input: { steps: 1, stepMs: 0 } },
      headers: { 'idempotency-key': '"o"' },
    };
    expect((await http(api.url, '/tasks', keyed)).status).toBe(202);

    await broker.stop();
    const started = Date.now();
    const down = await http(api.url, '/orders', { body: order });
    expect(down.status).toBe(503);
    expect(down.body.type).toBe('https://hookstream.dev/problems/kafka-unavailable');
    expect(down.headers.get('retry-after')).toBe('5');
    expect(Date.now() - started).toBeLessThan(6000);
    const task = await http(api.url, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    expect(task.status).toBe(503);
    const ready = await http(api.url, '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.checks.kafka).toBe('down');
    expect((await http(api.url, '/health/live')).status).toBe(200);
    // A repeat catches up with the topics before it answers; with the broker known down it is told so at once, as a
    // write is, not after KAFKA_TIMEOUT_MS (3 s here) of trying.
    const askedAgain = Date.now();
    const replay = await http(api.url, '/tasks', keyed);
    expect(replay.status).toBe(503);
    expect(replay.body.type).toBe('https://hookstream.dev/problems/kafka-unavailable');
    expect(Date.now() - askedAgain).toBeLessThan(3000);
    // Reads are served from the materialized views while Kafka is away.
    expect((await http(api.url, '/users/u-ada')).status).toBe(200);

    broker = await startLocalBroker({ cacheDir, persistent: true, dataDir });
    const back = Date.now();
    const deadline = back + 90000;
    expect(await writeOnceKafkaIsBack(order, deadline)).toBe(201);
    console.log(
      `kafka-outage: first write succeeded ${Date.now() - back} ms after the broker accepted connections again`,
    );
    expect((await http(api.url, '/health/ready')).status).toBe(200);
    const submitted = await http(api.url, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    expect(submitted.status).toBe(202);
    let final = '';
    while (Date.now() < deadline && final !== 'succeeded') {
      final = (await http(api.url, `/tasks/${submitted.body.taskId}`)).body.status;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(final).toBe('succeeded');
  }, 240000);
  test('a hung broker (SIGSTOP: the kernel still accepts connections) is down for readiness and writes; SIGCONT recovers', async () => {
    const order = { orderNumber: 2, itemCount: 1, status: 'open' };
    expect((await http(api.url, '/health/ready')).status).toBe(200);
    const pid = javaOf(broker.pid as number);
    process.kill(pid, 'SIGSTOP');
    try {
      const frozen = Date.now();
      let ready = await http(api.url, '/health/ready');
      while (ready.status === 200 && Date.now() - frozen < 15000) {
        await new Promise((r) => setTimeout(r, 250));
        ready = await http(api.url, '/health/ready');
      }
      expect(ready.status).toBe(503);
      expect(ready.body.checks.kafka).toBe('down');
      expect((await http(api.url, '/health')).status).toBe(503);
      console.log(`kafka-outage: readiness said down ${Date.now() - frozen} ms after the broker stopped answering`);
      const started = Date.now();
      const write = await http(api.url, '/orders', { body: order });
      expect(write.status).toBe(503);
      expect(write.body.type).toBe('https://hookstream.dev/problems/kafka-unavailable');
      expect(Date.now() - started).toBeLessThan(4000);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(await writeOnceKafkaIsBack(order, Date.now() + 90000)).toBe(201);
    expect((await http(api.url, '/health/ready')).status).toBe(200);
  }, 180000);

  test('a write answered 503 while the broker hung is abandoned: it does not land once the broker answers again', async () => {
    const made = await http(api.url, '/orders', { body: { orderNumber: 3, itemCount: 1, status: 'open' } });
    expect(made.status).toBe(201);
    const href: string = made.body._links.self.href;
    expect((await http(api.url, '/health/ready')).status).toBe(200);
    const pid = javaOf(broker.pid as number);
    process.kill(pid, 'SIGSTOP');
    const frozen = Date.now();
    try {
      // Sent while readiness still says up, so the delete's transaction is begun and then waits on the hung broker.
      const deleted = await http(api.url, href, { method: 'DELETE' });
      expect(deleted.status).toBe(503);
      expect(deleted.body.type).toBe('https://hookstream.dev/problems/kafka-unavailable');
      // The outage lasts well past the 503 (KAFKA_TIMEOUT_MS is 3 s): what the broker does on its return is not
      // "just as the deadline passed".
      await new Promise((r) => setTimeout(r, Math.max(0, frozen + 8000 - Date.now())));
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // A write after the return initializes the publisher's transactional ids again: whatever the hung one left open
    // is decided for good before it commits, so the topic read next is final.
    expect(await writeOnceKafkaIsBack({ orderNumber: 4, itemCount: 1, status: 'open' }, Date.now() + 90000)).toBe(201);
    const key = href.replace(/^\//, '');
    const latest = await latestValue([broker.bootstrap], api.kafka.topics.resources, key);
    expect(latest).toEqual(expect.stringContaining('"orderNumber":3'));
    expect((await http(api.url, href)).status).toBe(200);
  }, 180000);
});
