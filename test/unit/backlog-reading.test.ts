import { BacklogReading, type ReadingOwner } from '../../consumers/callback-bridge/backlog-reading';
import type { DeliveryLane } from '../../consumers/callback-bridge/delivery-lanes';
import { ReadingSlots } from '../../consumers/callback-bridge/reading-slots';
import type { PartitionReader, PartitionReadOptions, PartitionReading } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import { until } from '../support/until';

/*
 * A lane backlog's turns at reading its partition (consumers/callback-bridge/backlog-reading.ts), with a fake reader
 * behind the project's PartitionReader interface: each open is a promise the test settles, so the orders a broker can
 * make (an open that fails, one that ends after its reading was stopped) are played out one by one.
 */

interface Opening {
  options: PartitionReadOptions;
  resolve(): void;
  reject(err: Error): void;
  stopped: boolean;
}

/** A PartitionReader whose opens the test settles; each reading records whether it was stopped. */
function fakeReader() {
  const openings: Opening[] = [];
  const reader: PartitionReader = {
    open: (options) =>
      new Promise<PartitionReading>((resolve, reject) => {
        const opening: Opening = {
          options,
          stopped: false,
          reject,
          resolve: () =>
            resolve({
              reached: async () => undefined,
              stop: async () => {
                opening.stopped = true;
              },
            }),
        };
        openings.push(opening);
      }),
    endOffset: async () => '0',
    logEnd: async () => '0',
    startOffset: async () => '0',
  };
  return { reader, openings };
}

/** The lane the backlog queues into: room as the test says. */
function fakeLane() {
  const lane = { room: false, wanted: 0 };
  const deliveryLane = {
    hasRoom: () => lane.room,
    wantRoom: () => {
      lane.wanted += 1;
    },
  } as unknown as DeliveryLane;
  return { lane, deliveryLane };
}

/** A backlog as far as its reading sees it: it opens a reading from `from` whenever it is resumed. */
function backlogReading(slots: ReadingSlots, from = 7n) {
  const { reader, openings } = fakeReader();
  const warnings: { msg: string; err?: { stack?: string }; retryInMs?: number }[] = [];
  const logger = createLogger('warn', 'test', { write: (line: string) => void warnings.push(JSON.parse(line)) });
  const owner: ReadingOwner & { resumed: number } = {
    topic: 'events',
    partition: 2,
    subscriptionId: 'sub-1',
    resumed: 0,
    resume: () => {
      owner.resumed += 1;
      if (!reading.resumeWaiting() && !reading.busy) reading.start(from);
    },
    yieldSlot: () => reading.yieldSlot(),
  };
  const reading = new BacklogReading(owner, { reader, logger, kafkaTimeoutMs: 1000, slots }, async () => undefined);
  return { reading, owner, openings, warnings };
}

/** lets promise callbacks already settled run (an open's rejection reaching its handler) */
const settled = () => new Promise((r) => setImmediate(r));

describe('a lane backlog reading: one at a time, opened again when Kafka fails it, its slot shared', () => {
  test('a reading Kafka fails is logged with its error and opened again from where the backlog is', async () => {
    const { reading, openings, warnings } = backlogReading(new ReadingSlots(1));
    reading.start(7n);
    expect(openings).toHaveLength(1);
    expect(openings[0].options).toMatchObject({ topic: 'events', partition: 2, fromOffset: '7' });
    openings[0].reject(new Error('broker went away'));
    await settled();
    expect(reading.active).toBe(false);
    expect(reading.busy).toBe(true); // its retry is due
    expect(warnings).toEqual([
      expect.objectContaining({
        msg: 'could not read a lane backlog from Kafka; trying again',
        subscriptionId: 'sub-1',
        retryInMs: expect.any(Number),
        err: expect.objectContaining({ stack: expect.stringContaining('broker went away') }),
      }),
    ]);
    await until(async () => (openings.length === 2 ? true : undefined), 20000, 10);
    expect(openings[1].options.fromOffset).toBe('7');
    openings[1].resolve();
    await settled();
    expect(reading.active).toBe(true);
    reading.close();
    expect(openings[1].stopped).toBe(true);
  });

  test('a reading that fails after its backlog closed is not opened again', async () => {
    const { reading, openings, warnings } = backlogReading(new ReadingSlots(1));
    reading.start(7n);
    reading.close();
    openings[0].reject(new Error('broker went away'));
    await settled();
    // No retry is due: nothing is left that would open a reading.
    expect(reading.busy).toBe(false);
    expect(warnings).toEqual([]);
  });

  test('a reading stopped while it opens is stopped once open, and the backlog is resumed', async () => {
    const { reading, owner, openings } = backlogReading(new ReadingSlots(1));
    reading.start(7n);
    reading.stop();
    openings[0].resolve();
    await settled();
    expect(openings[0].stopped).toBe(true);
    expect(owner.resumed).toBe(1);
    // Resumed, the backlog opened a new turn, which the slot given back let it take.
    expect(openings).toHaveLength(2);
  });

  test('a record waiting for room gives the slot to a backlog that waits for one; a reading that reads keeps it', async () => {
    const slots = new ReadingSlots(1);
    const first = backlogReading(slots);
    const second = backlogReading(slots, 3n);
    const { lane, deliveryLane } = fakeLane();
    first.reading.start(7n);
    first.openings[0].resolve();
    await settled();
    // Reading, not waiting for room: it keeps its slot, and the second backlog waits for one.
    expect(first.reading.yieldSlot()).toBe(false);
    second.reading.start(3n);
    expect(second.openings).toHaveLength(0);

    const waited = first.reading.waitForRoom(deliveryLane);
    expect(lane.wanted).toBe(1);
    // Only waiting for room: the slots ask it to yield, its reading stops, and the second backlog reads.
    await until(async () => (second.openings.length === 1 ? true : undefined), 20000, 10);
    expect(second.openings[0].options.fromOffset).toBe('3');
    expect(first.openings[0].stopped).toBe(true);
    await expect(waited).resolves.toBe(false);
    expect(first.reading.active).toBe(false);
  });

  test('a record offered again while the first offer waits for room: the first ends, the second goes on', async () => {
    const { reading } = backlogReading(new ReadingSlots(1));
    const { deliveryLane } = fakeLane();
    reading.start(7n);
    const firstOffer = reading.waitForRoom(deliveryLane);
    const secondOffer = reading.waitForRoom(deliveryLane);
    await expect(firstOffer).resolves.toBe(true);
    expect(reading.resumeWaiting()).toBe(true);
    await expect(secondOffer).resolves.toBe(false);
    expect(reading.resumeWaiting()).toBe(false);
  });
});
