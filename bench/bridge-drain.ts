/*
 * The callback bridge draining one subscription's backlog, against the
 * plainest correct thing: a kafkajs consumer (read_committed) that POSTs each
 * event with undici and awaits the answer before the next, in order. Both
 * read the same N queued `order.created` events and POST them to the same
 * loopback receiver, which answers 204.
 */
import { createServer, type Server } from 'node:http';
import { Kafka, logLevel } from 'kafkajs';
import { request } from 'undici';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { startService } from '../src/service';

export interface DrainFigure {
  events: number;
  /** events over the time from the first delivery to the last: the drain itself, start-up left out */
  bridgePerSecond: number;
  plainLoopPerSecond: number;
  /** from starting the process (or the consumer) to its first delivery */
  bridgeFirstDeliveryMs: number;
  plainLoopFirstDeliveryMs: number;
}

class CountingReceiver {
  count = 0;
  /** when the deliveries since the last mark() began and ended */
  firstAt = 0;
  lastAt = 0;
  private markedAt = 0;
  private waiter: { target: number; resolve(): void } | undefined;
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        this.count += 1;
        const now = performance.now();
        if (this.firstAt < this.markedAt) this.firstAt = now;
        this.lastAt = now;
        res.writeHead(204).end();
        if (this.waiter && this.count >= this.waiter.target) this.waiter.resolve();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    return this;
  }

  mark(): number {
    this.markedAt = performance.now();
    return this.markedAt;
  }

  /** deliveries per second from the first after the mark to the last */
  rate(events: number): number {
    return Math.round((events - 1) / Math.max(0.001, (this.lastAt - this.firstAt) / 1000));
  }

  reached(target: number): Promise<void> {
    if (this.count >= target) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiter = { target, resolve };
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server?.close(() => resolve()));
  }
}

export async function bridgeDrain(brokers: string[], events: number, key: string): Promise<DrainFigure> {
  const receiver = await new CountingReceiver().start();
  const env = {
    KAFKA_BROKERS: brokers.join(','),
    TOPIC_PREFIX: `bench.${Date.now()}.drain.`,
    API_KEYS: `bench:${key}`,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    CALLBACK_ALLOW_PRIVATE: 'true',
  };
  const api = await startService({ config: loadConfig(env), brokers, logger: createLogger('warn'), role: 'api' });
  const topic = api.kafka.topics.domainEvents;
  try {
    const res = await fetch(`${api.url}/subscriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ callbackUrl: `${receiver.url}/hook`, mode: 'continuous', events: ['order.created'] }),
    });
    if (res.status !== 201) throw new Error(`POST /subscriptions answered ${res.status}: ${await res.text()}`);
    for (let i = 0; i < events; i += 500) {
      const records = Array.from({ length: Math.min(500, events - i) }, (_, j) => ({
        topic,
        key: `order-${i + j}`,
        value: JSON.stringify({ event: 'order.created', resource: `/orders/order-${i + j}`, data: { n: i + j } }),
      }));
      await api.kafka.publisher.publish(records);
    }
  } finally {
    await api.stop();
  }

  let started = receiver.mark();
  const bridge = await startService({
    config: loadConfig({ ...env, PORT: '0' }),
    brokers,
    logger: createLogger('warn'),
    role: 'bridge',
  });
  await receiver.reached(events);
  const bridgePerSecond = receiver.rate(events);
  const bridgeFirstDeliveryMs = Math.round(receiver.firstAt - started);
  await bridge.stop();

  const before = receiver.count;
  const kafka = new Kafka({ clientId: 'bench-plain-loop', brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `bench-plain-${Date.now()}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  started = receiver.mark();
  await consumer.run({
    eachMessage: async ({ message }) => {
      const answer = await request(`${receiver.url}/plain`, {
        method: 'POST',
        body: message.value ?? '',
        headers: { 'content-type': 'application/json' },
      });
      await answer.body.dump();
    },
  });
  await receiver.reached(before + events);
  const plainLoopPerSecond = receiver.rate(events);
  const plainLoopFirstDeliveryMs = Math.round(receiver.firstAt - started);
  await consumer.disconnect();
  await receiver.stop();
  return { events, bridgePerSecond, plainLoopPerSecond, bridgeFirstDeliveryMs, plainLoopFirstDeliveryMs };
}
