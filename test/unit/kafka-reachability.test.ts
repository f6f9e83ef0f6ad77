import { createServer, type Server } from 'node:net';
import { KafkaHealth } from '../../src/kafka/kafka-health';
import { withKafkaTimeout } from '../../src/kafka/kafka-timeout';
import { KafkaUnavailableError } from '../../src/kafka/types';
import { brokersUnreachable } from '../../src/startup/broker-reachable';

/* Whether a bootstrap broker answers at all, asked of TCP listeners on loopback: no Kafka needed to know that. */
let listening: Server;
let open: string;
let closed: string;
beforeAll(async () => {
  listening = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  open = `127.0.0.1:${(listening.address() as { port: number }).port}`;
  // A port that was just free and is closed again: connecting to it is refused.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closed = `127.0.0.1:${(probe.address() as { port: number }).port}`;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
});
afterAll(() => new Promise<void>((resolve) => listening.close(() => resolve())));

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
  test('up while a broker accepts connections, down when none does; a failed write marks it down at once', async () => {
    const health = new KafkaHealth([closed, open]);
    expect(await health.probe()).toBe(true);
    health.markDown();
    expect(health.up).toBe(false);
    expect(await health.probe()).toBe(true);
    expect(await new KafkaHealth([closed]).probe()).toBe(false);
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
