import { Kafka, logLevel, type Admin, type Consumer } from 'kafkajs';
import { runGroupConsumer } from '../../src/kafka/group-consumer';
import { createLogger } from '../../src/logger';
import { testBrokers, uniquePrefix } from '../support/test-service';
import { trackedSockets } from '../support/tracked-sockets';
import { capturedLogger } from '../unit/fakes';
import { until } from '../support/until';

/** kafkajs, except that every offset commit a consumer sends is recorded: partition and offset. */
function recordingCommits(kafka: Kafka, commits: string[]): Kafka {
  const consumer = (config: Parameters<Kafka['consumer']>[0]): Consumer => {
    const c = kafka.consumer(config);
    const commitOffsets = c.commitOffsets.bind(c);
    c.commitOffsets = (offsets) => {
      commits.push(...offsets.map((o) => `${o.partition}:${o.offset}`));
      return commitOffsets(offsets);
    };
    return c;
  };
  return Object.assign(Object.create(kafka) as Kafka, { consumer });
}

/** kafkajs, except that the offsets its consumers hand to eachMessage are recorded as they are handed out. */
function recordingHandouts(kafka: Kafka, offsets: string[]): Kafka {
  const consumer = (config: Parameters<Kafka['consumer']>[0]): Consumer => {
    const c = kafka.consumer(config);
    const run = c.run.bind(c);
    c.run = (config) =>
      run({
        ...config,
        eachMessage: async (payload) => {
          offsets.push(payload.message.offset);
          await config?.eachMessage?.(payload);
        },
      });
    return c;
  };
  return Object.assign(Object.create(kafka) as Kafka, { consumer });
}

const kafka = new Kafka({ clientId: 'test-commits', brokers: testBrokers(), logLevel: logLevel.NOTHING });

/** A topic of one partition holding `count` records. */
async function createWithRecords(topic: string, count: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  // Not waitForLeaders: kafkajs then reads the new topic's metadata and throws when the broker does not know it yet
  // (UNKNOWN_TOPIC_OR_PARTITION, seen with the suites in parallel); the producer retries that until it does.
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: false });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: Array.from({ length: count }, (_, i) => ({ key: 'k', value: `${i}` })) });
  await producer.disconnect();
}

describe('the group consumer on the real broker', () => {
  test('records that finish in the same turn share one offset commit', async () => {
    const topic = `${uniquePrefix('commits')}events`;
    await createWithRecords(topic, 20);

    // Every handler waits for one gate, so all twenty finish in one turn, as a batch of callbacks whose history
    // was written in one transaction does.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let started = 0;
    const commits: string[] = [];
    const consumer = await runGroupConsumer(
      recordingCommits(kafka, commits),
      {
        groupId: `${topic}.group`,
        topics: [topic],
        maxInFlight: 100,
        handle: async () => {
          started += 1;
          await gate;
        },
      },
      createLogger('silent'),
    );
    try {
      await until(async () => (started === 20 ? true : undefined), 30000);
      open();
      await until(async () => (commits.length > 0 ? true : undefined), 30000);
    } finally {
      // Stopping settles every commit begun, so what is recorded then is all there will be.
      await consumer.stop();
    }
    expect(commits).toEqual(['0:20']);
  });

  test('records that finished just before a stop are committed by it', async () => {
    const topic = `${uniquePrefix('commits-stop')}events`;
    await createWithRecords(topic, 5);
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let started = 0;
    const commits: string[] = [];
    const consumer = await runGroupConsumer(
      recordingCommits(kafka, commits),
      {
        groupId: `${topic}.group`,
        topics: [topic],
        maxInFlight: 100,
        handle: async () => {
          started += 1;
          await gate;
        },
      },
      createLogger('silent'),
    );
    await until(async () => (started === 5 ? true : undefined), 30000);
    // The stop is the next thing the event loop runs after the records finish: before their commit would go.
    const stopped = new Promise<void>((resolve, reject) => setImmediate(() => consumer.stop().then(resolve, reject)));
    open();
    await stopped;
    expect(commits).toEqual(['0:5']);
  });

  test('with a stop grace, a record that finishes within it is committed; one still running after it is handed back', async () => {
    // The bridge's: an event whose callback was just delivered, its history being written, must not be handed back
    // (and delivered again after the restart) because a SIGTERM came in between.
    const topic = `${uniquePrefix('commits-grace')}events`;
    await createWithRecords(topic, 2);
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const commits: string[] = [];
    const handedBack: string[] = [];
    let started = 0;
    const { logger, lines } = capturedLogger('info');
    const consumer = await runGroupConsumer(
      recordingCommits(kafka, commits),
      {
        groupId: `${topic}.group`,
        topics: [topic],
        maxInFlight: 10,
        stopGraceMs: 3000,
        handle: async (record, signal) => {
          started += 1;
          if (record.offset === '0') return gate;
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          handedBack.push(record.offset);
        },
      },
      logger,
    );
    await until(async () => (started === 2 ? true : undefined), 30000);
    const stopped = consumer.stop();
    // Record 0 finishes after the stop began, within the grace.
    setTimeout(open, 200);
    await stopped;
    expect(commits).toEqual(['0:1']);
    expect(handedBack).toEqual(['1']);
    // The operator is told what the next owner of the partition will handle again.
    expect(lines.filter((l) => l.msg === 'stopped; records still running were handed back')).toEqual([
      expect.objectContaining({ level: 30, groupId: `${topic}.group`, records: 1 }),
    ]);
  });

  test('a record waiting for a slot when the stop comes is not started: nothing is committed past the one running', async () => {
    const topic = `${uniquePrefix('commits-waiting')}events`;
    await createWithRecords(topic, 3);
    const commits: string[] = [];
    const handedOut: string[] = [];
    let firstRunning = false;
    const consumer = await runGroupConsumer(
      recordingHandouts(recordingCommits(kafka, commits), handedOut),
      {
        groupId: `${topic}.group`,
        topics: [topic],
        maxInFlight: 1,
        // Record 0 runs until it is handed back; the others would finish at once.
        handle: async (record, signal) => {
          if (record.offset !== '0') return;
          firstRunning = true;
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        },
      },
      createLogger('silent'),
    );
    // Record 1 is handed out while record 0 holds the only slot: it waits for that slot.
    await until(async () => (firstRunning && handedOut.includes('1') ? true : undefined), 30000);
    await consumer.stop();
    // Record 0 never finished, so no commit may pass it; record 1 taking the freed slot would commit 2.
    expect(commits).toEqual([]);
  });
});

describe('a partition assigned with nothing new to read', () => {
  test('onAssigned tells its committed offset and hand-back signal, though no record comes', async () => {
    const topic = `${uniquePrefix('assigned')}events`;
    await createWithRecords(topic, 3);
    const groupId = `${topic}.group`;
    const silent = createLogger('silent');
    // A first member reads the three records and commits past them, then leaves.
    let handled = 0;
    const first = await runGroupConsumer(
      kafka,
      { groupId, topics: [topic], maxInFlight: 10, handle: async () => void (handled += 1) },
      silent,
    );
    await until(async () => (handled === 3 ? true : undefined), 30000);
    await first.stop();
    // The next member owns a partition it will get no record of: it is told of it all the same.
    const told: { partition: number; resumeAt: bigint; signal: AbortSignal }[] = [];
    const records: string[] = [];
    const second = await runGroupConsumer(
      kafka,
      {
        groupId,
        topics: [topic],
        maxInFlight: 10,
        handle: async (r) => void records.push(r.offset),
        onAssigned: (_, partition, signal, resumeAt) => told.push({ partition, resumeAt, signal }),
      },
      silent,
    );
    try {
      await until(async () => (told.length > 0 ? true : undefined), 30000);
      expect(told.map(({ partition, resumeAt }) => ({ partition, resumeAt }))).toEqual([
        { partition: 0, resumeAt: 3n },
      ]);
      expect(told[0].signal.aborted).toBe(false);
      expect(records).toEqual([]);
    } finally {
      await second.stop();
    }
    // Handed back on the stop: whatever the handler began for the partition ends with it.
    expect(told[0].signal.aborted).toBe(true);
  }, 60000);
});

describe('a stop while the assignment reads its committed offsets', () => {
  test('closes every connection, also one the read in flight opens after the stop began', async () => {
    const topic = `${uniquePrefix('announce-stop')}events`;
    await createWithRecords(topic, 1);
    // Every socket this client opens, and an offset read that waits for the test before it goes to the broker.
    const sockets = trackedSockets();
    const tracked = new Kafka({
      clientId: 'test-announce-stop',
      brokers: testBrokers(),
      logLevel: logLevel.NOTHING,
      socketFactory: sockets.factory,
    });
    let reached: () => void = () => undefined;
    const reading = new Promise<void>((resolve) => (reached = resolve));
    let go: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (go = resolve));
    const admin = (): Admin => {
      const a = tracked.admin();
      const fetchOffsets = a.fetchOffsets.bind(a);
      a.fetchOffsets = (async (options: Parameters<Admin['fetchOffsets']>[0]) => {
        reached();
        await gate;
        return fetchOffsets(options);
      }) as Admin['fetchOffsets'];
      return a;
    };
    const consumer = await runGroupConsumer(
      Object.assign(Object.create(tracked) as Kafka, { admin }),
      {
        groupId: `${topic}.group`,
        topics: [topic],
        maxInFlight: 10,
        handle: async () => undefined,
        onAssigned: () => undefined,
      },
      createLogger('silent'),
    );
    await reading;
    // The stop begins while the read waits; the read then goes to the broker (kafkajs connects again for it).
    const stopped = consumer.stop();
    go();
    await stopped;
    await sockets.allClosed();
  }, 60000);
});
