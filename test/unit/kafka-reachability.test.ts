import { createServer, type Server, type Socket } from 'node:net';
import { brokerAnswers } from '../../src/kafka/broker-ping';
import { KafkaHealth } from '../../src/kafka/kafka-health';
import { NamedBrokers } from '../../src/kafka/named-brokers';
import { withKafkaTimeout } from '../../src/kafka/kafka-timeout';
import { KafkaUnavailableError } from '../../src/kafka/types';
import { brokersUnreachable } from '../../src/startup/broker-reachable';
import { silentServer } from '../support/silent-server';

/*
 * Whether a bootstrap broker answers at all, asked of TCP listeners on loopback: one that answers an ApiVersions
 * request as a broker does (its correlation id back in a complete frame), one that accepts and says nothing (a hung
 * broker, whose connections the kernel still accepts), and a closed port. No Kafka needed to know that.
 */
let listening: Server;
let stalled: Server;
let open: string;
let silent: string;
let closed: string;

function answersApiVersions(socket: Socket): void {
  let received = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    if (received.length < 12 || received.length < 4 + received.readInt32BE(0)) return;
    const answer = Buffer.alloc(14);
    answer.writeInt32BE(10, 0);
    answer.writeInt32BE(received.readInt32BE(8), 4);
    answer.writeInt16BE(0, 8);
    answer.writeInt32BE(0, 10);
    socket.end(answer);
  });
}

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as { port: number }).port}`;
};

beforeAll(async () => {
  listening = createServer(answersApiVersions);
  open = await listen(listening);
  stalled = silentServer();
  silent = await listen(stalled);
  // A port that was just free and is closed again: connecting to it is refused.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closed = `127.0.0.1:${(probe.address() as { port: number }).port}`;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
});
afterAll(async () => {
  listening.close();
  stalled.close();
});

describe('start-up: is any bootstrap broker reachable', () => {
  test('one broker accepting connections is enough', async () => {
    expect(await brokersUnreachable([closed, open])).toBeUndefined();
  });

  test("none: the last one's error, which names the address", async () => {
    const err = await brokersUnreachable([closed]);
    expect(err?.message).toMatch(/ECONNREFUSED/);
    expect(err?.message).toContain(closed.split(':')[1]);
  });
});

describe('KafkaHealth', () => {
  test('up while a broker answers, down when none does; a failed write marks it down at once', async () => {
    const health = new KafkaHealth([closed, open]);
    expect(await health.probe()).toBe(true);
    health.markDown();
    expect(health.up).toBe(false);
    expect(await health.probe()).toBe(true);
    expect(await new KafkaHealth([closed]).probe()).toBe(false);
  });

  test('a broker that accepts the connection but never answers (hung) is down: a connect is no answer', async () => {
    expect(await brokerAnswers(silent, 300)).toBe(false);
    expect(await brokerAnswers(closed, 300)).toBe(false);
    expect(await brokerAnswers(open, 2000)).toBe(true);
    // Silent twice in a row: once may be a loaded machine that missed the answer's deadline.
    const hung = new KafkaHealth([silent], 1000, 300);
    expect(await hung.probe()).toBe(true);
    expect(await hung.probe()).toBe(false);
    expect(await new KafkaHealth([silent, open], 1000, 300).probe()).toBe(true);
    // A refused connection is no loaded machine: down at the first probe.
    expect(await new KafkaHealth([closed], 1000, 300).probe()).toBe(false);
  });

  test('a bootstrap address gone while a broker the cluster named answers is up: the alias is not the cluster', async () => {
    const health = new KafkaHealth([closed], 1000, 300);
    expect(await health.probe()).toBe(false);
    health.alsoProbe([open, closed]);
    expect(await health.probe()).toBe(true);
  });

  test('the brokers the cluster names replace those it named before; the bootstrap ones stay first', async () => {
    const health = new KafkaHealth([closed], 1000, 300);
    health.alsoProbe([open]);
    expect(await health.probe()).toBe(true);
    // The cluster now names another address (a rolling restart): the one before is no longer asked.
    health.alsoProbe([silent]);
    expect(await health.probe()).toBe(true); // one silent probe is not yet down
    expect(await health.probe()).toBe(false);
  });

  test('NamedBrokers: clients bootstrap from the bootstrap list, then the named brokers; an IPv6 host only probed', () => {
    const probed: string[][] = [];
    const health = { alsoProbe: (b: string[]) => probed.push(b) } as unknown as KafkaHealth;
    const named = new NamedBrokers(['alias:9092'], health);
    expect(named.list()).toEqual(['alias:9092']);
    named.learn([
      { host: 'kafka-0.kafka', port: 9092 },
      { host: 'fd00::1', port: 9093 },
      { host: 'alias', port: 9092 },
    ]);
    expect(named.list()).toEqual(['alias:9092', 'kafka-0.kafka:9092']);
    expect(probed.at(-1)).toEqual(['kafka-0.kafka:9092', '[fd00::1]:9093', 'alias:9092']);
    named.learn([{ host: 'kafka-1.kafka', port: 9092 }]);
    expect(named.list()).toEqual(['alias:9092', 'kafka-1.kafka:9092']);
  });

  test('probes on its interval until stopped', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    try {
      const health = new KafkaHealth([open], 1000);
      const probe = jest.spyOn(health, 'probe');
      health.start();
      jest.advanceTimersByTime(2000);
      expect(probe).toHaveBeenCalledTimes(2);
      health.stop();
      jest.advanceTimersByTime(5000);
      expect(probe).toHaveBeenCalledTimes(2);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('withKafkaTimeout', () => {
  test('passes an answer through', async () => {
    await expect(withKafkaTimeout(Promise.resolve(7), 1000, 'list offsets')).resolves.toBe(7);
  });

  test('no answer within the bound is KafkaUnavailableError, naming the call', async () => {
    const never = new Promise<never>(() => undefined);
    const late = withKafkaTimeout(never, 10, 'list offsets');
    await expect(late).rejects.toBeInstanceOf(KafkaUnavailableError);
    await expect(late).rejects.toThrow('list offsets: no answer within 10 ms');
  });
});
