/*
 * What hookstream is compared with, started in the same run on the same
 * broker: a bare Fastify route, and Fastify routes that write one Kafka record
 * per request with a plain kafkajs producer (acks=all, idempotent), awaited per
 * request (naive) or batched across concurrent requests (one send per batch).
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { Kafka, logLevel, type Producer } from 'kafkajs';

export interface Baseline {
  url: string;
  close(): Promise<void>;
}

async function listen(app: FastifyInstance, close: () => Promise<void> = async () => undefined): Promise<Baseline> {
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url,
    close: async () => {
      await app.close();
      await close();
    },
  };
}

/** POST /tasks answers 202 with a small JSON body; GET /echo answers the JSON body it was given at start. */
export async function bareFastify(getBody: unknown = {}): Promise<Baseline> {
  const app = Fastify();
  app.post('/tasks', async (_req, reply) => reply.code(202).send({ taskId: randomUUID() }));
  app.get('/echo', async () => getBody);
  return listen(app);
}

async function producer(brokers: string[]): Promise<Producer> {
  const kafka = new Kafka({ clientId: 'bench-baseline', brokers, logLevel: logLevel.NOTHING });
  const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  return p;
}

export async function naiveKafka(brokers: string[], topic: string): Promise<Baseline> {
  const p = await producer(brokers);
  const app = Fastify();
  app.post('/tasks', async (req, reply) => {
    const taskId = randomUUID();
    await p.send({ topic, acks: -1, messages: [{ key: taskId, value: JSON.stringify(req.body) }] });
    return reply.code(202).send({ taskId });
  });
  return listen(app, () => p.disconnect());
}

export async function batchedKafka(brokers: string[], topic: string): Promise<Baseline> {
  const p = await producer(brokers);
  let queue: { key: string; value: string; done: (err?: unknown) => void }[] = [];
  let sending = false;
  const flush = async () => {
    if (sending) return;
    sending = true;
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        await p.send({ topic, acks: -1, messages: batch.map(({ key, value }) => ({ key, value })) });
        for (const m of batch) m.done();
      } catch (err) {
        for (const m of batch) m.done(err);
      }
    }
    sending = false;
  };
  const app = Fastify();
  app.post('/tasks', async (req, reply) => {
    const taskId = randomUUID();
    await new Promise<void>((resolve, reject) => {
      queue.push({ key: taskId, value: JSON.stringify(req.body), done: (err) => (err ? reject(err) : resolve()) });
      void flush();
    });
    return reply.code(202).send({ taskId });
  });
  return listen(app, () => p.disconnect());
}
