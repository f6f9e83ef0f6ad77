/*
 * What the bridge benchmarks share: a loopback receiver that counts (and times) what it gets, an api to subscribe
 * through, domain events written straight to the topic, and the plain in-order loop the bridge is measured against.
 */
import { createServer, type Server } from 'node:http';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { request } from 'undici';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { CONSUMER_ROLES } from '../consumers/roles';
import { exampleResources, exampleTaskTypes } from '../src/examples';
import { startService, type RunningService } from '../src/service';

export class CountingReceiver {
  count = 0;
  /** when the deliveries since the last mark() began and ended */
  firstAt = 0;
  lastAt = 0;
  /** ms from each event's `sentAt` (its data, ms since epoch) to its receipt */
  readonly delays: number[] = [];
  private markedAt = 0;
  private waiter: { target: number; resolve(): void } | undefined;
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        this.count += 1;
        const now = performance.now();
        if (this.firstAt < this.markedAt) this.firstAt = now;
        this.lastAt = now;
        const sentAt = /"sentAt":(\d+)/.exec(body)?.[1];
        if (sentAt) this.delays.push(Date.now() - Number(sentAt));
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
    this.delays.length = 0;
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
    this.server?.closeAllConnections();
    return new Promise((resolve) => this.server?.close(() => resolve()));
  }
}

export function benchEnv(brokers: string[], name: string, key: string): Record<string, string> {
  return {
    KAFKA_BROKERS: brokers.join(','),
    TOPIC_PREFIX: `bench.${Date.now()}.${name}.`,
    API_KEYS: `bench:${key}`,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    CALLBACK_ALLOW_PRIVATE: 'true',
    // For trying other settings: `TASK_CONCURRENCY=64 npm run bench -- --only=e2e`.
    ...(process.env.TASK_CONCURRENCY ? { TASK_CONCURRENCY: process.env.TASK_CONCURRENCY } : {}),
  };
}

/** What src/main.ts registers and runs: the example domain and task types, and every consumer role. */
export const EXAMPLE_SERVICE = { resources: exampleResources, taskTypes: exampleTaskTypes, consumers: CONSUMER_ROLES };

export function startRole(brokers: string[], env: Record<string, string>, role: 'api' | 'bridge' | 'runner') {
  return startService({ config: loadConfig(env), brokers, logger: createLogger('warn'), role, ...EXAMPLE_SERVICE });
}

export async function subscribe(api: RunningService, key: string, callbackUrl: string): Promise<void> {
  const res = await fetch(`${api.url}/subscriptions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ callbackUrl, mode: 'continuous', events: ['order.created'] }),
  });
  if (res.status !== 201) throw new Error(`POST /subscriptions answered ${res.status}: ${await res.text()}`);
}

/** `order.created` events n = from .. from+count-1, written as the api writes domain events, 500 per transaction. */
export async function writeEvents(api: RunningService, from: number, count: number): Promise<void> {
  const topic = api.kafka.topics.domainEvents;
  for (let i = from; i < from + count; i += 500) {
    const records = Array.from({ length: Math.min(500, from + count - i) }, (_, j) => ({
      topic,
      key: `order-${i + j}`,
      value: JSON.stringify({
        event: 'order.created',
        resource: `/orders/order-${i + j}`,
        data: { n: i + j, sentAt: Date.now() },
      }),
    }));
    await api.kafka.publisher.publish(records);
  }
}

/** A plain kafkajs consumer (read_committed) that POSTs each event with undici and awaits the answer, in order. */
export async function plainLoop(brokers: string[], topic: string, url: string): Promise<Consumer> {
  const kafka = new Kafka({ clientId: 'bench-plain-loop', brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `bench-plain-${Date.now()}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const answer = await request(url, {
        method: 'POST',
        body: message.value ?? '',
        headers: { 'content-type': 'application/json' },
      });
      await answer.body.dump();
    },
  });
  return consumer;
}

export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}
