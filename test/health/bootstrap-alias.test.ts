import { connect, createServer, type Server, type Socket } from 'node:net';
import { brokerAddress } from '../../src/kafka/broker-ping';
import { createLogger } from '../../src/logger';
import { startService, type RunningService } from '../../src/service';
import { http } from '../support/http';
import { until } from '../support/until';
import { EXAMPLE_SERVICE, testBrokers, testConfig, uniquePrefix } from '../support/test-service';

/*
 * The api is given a bootstrap address that is only an alias of the broker (a TCP relay here; a load balancer or a
 * DNS name in production). The Kafka client reads the cluster's metadata through it and then talks to the broker at
 * its advertised address. When the alias goes away and the broker does not, Kafka is up: readiness and writes must
 * say so. They used to probe only the bootstrap address, and refused every write with 503 within a second.
 */
const HEALTH_CLIENT_ID = Buffer.from('hookstream-health');

/**
 * A relay to the broker that, once broken, resets every connection it holds and each new one at its first bytes, as a
 * load balancer with no backend left does.
 */
class Relay {
  broken = false;
  /** health probes (ApiVersions from the api's probe) that reached the relay after it broke */
  probesCutOff = 0;
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = createServer((client) => this.relay(client));
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  break(): void {
    this.broken = true;
    for (const s of this.sockets) s.resetAndDestroy();
  }

  close(): Promise<void> {
    this.break();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: Socket): void {
    client.on('error', () => undefined);
    client.once('data', (first: Buffer) => {
      if (this.broken) {
        if (first.includes(HEALTH_CLIENT_ID)) this.probesCutOff += 1;
        client.resetAndDestroy();
        return;
      }
      const upstream = connect(this.target);
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.once('close', () => this.sockets.delete(s));
      }
      upstream.write(first);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }
}

describe('a bootstrap address that is an alias of the broker', () => {
  let relay: Relay;
  let api: RunningService;

  beforeAll(async () => {
    relay = new Relay(brokerAddress(testBrokers()[0]));
    const alias = await relay.listen();
    const config = testConfig(uniquePrefix('alias'), { KAFKA_BROKERS: alias });
    api = await startService({
      config,
      brokers: [alias],
      logger: createLogger(config.logLevel),
      role: 'api',
      ...EXAMPLE_SERVICE,
    });
  }, 120000);

  afterAll(async () => {
    await api?.stop();
    await relay?.close();
  });

  test('gone while the broker serves: readiness stays ready and a task is still accepted', async () => {
    expect((await http(api.url, '/health/ready')).status).toBe(200);
    relay.break();
    // Two of the api's health probes (one a second) have found the alias gone: one refused probe was enough to call
    // Kafka down when only the bootstrap address was probed.
    await until(async () => (relay.probesCutOff >= 2 ? true : undefined), 20000);
    const ready = await http(api.url, '/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.checks.kafka).toBe('up');
    const task = await http(api.url, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    expect(task.status).toBe(202);
  });
});
