import { InFlightSlots } from '../../src/kafka/in-flight-slots';

describe('in-flight slots', () => {
  afterEach(() => jest.useRealTimers());

  it('hands out its places at once, then one per release, in the order asked', async () => {
    const slots = new InFlightSlots(2);
    const heartbeat = jest.fn(async () => undefined);
    await slots.acquire(heartbeat);
    await slots.acquire(heartbeat);
    const order: string[] = [];
    const third = slots.acquire(heartbeat).then(() => order.push('third'));
    const fourth = slots.acquire(heartbeat).then(() => order.push('fourth'));
    slots.release();
    await third;
    expect(order).toEqual(['third']);
    slots.release();
    await fourth;
    expect(order).toEqual(['third', 'fourth']);
  });

  it('heartbeats every second while a record waits for a place', async () => {
    jest.useFakeTimers();
    const slots = new InFlightSlots(1);
    const heartbeat = jest.fn(async () => undefined);
    await slots.acquire(heartbeat);
    const waiting = slots.acquire(heartbeat);
    await jest.advanceTimersByTimeAsync(3500);
    expect(heartbeat).toHaveBeenCalledTimes(3);
    slots.release();
    await waiting;
    await jest.advanceTimersByTimeAsync(2000);
    expect(heartbeat).toHaveBeenCalledTimes(3);
  });

  it('a failed heartbeat gives up the place waited for and throws; the place goes to the next', async () => {
    jest.useFakeTimers();
    const slots = new InFlightSlots(1);
    await slots.acquire(async () => undefined);
    const rebalance = new Error('the group is rebalancing');
    const failing = slots.acquire(async () => Promise.reject(rebalance));
    const failed = expect(failing).rejects.toBe(rebalance);
    await jest.advanceTimersByTimeAsync(1000);
    await failed;
    let next = false;
    const after = slots.acquire(async () => undefined).then(() => (next = true));
    slots.release();
    await after;
    expect(next).toBe(true);
  });

  it('a place granted while the heartbeat was failing is given back, not lost', async () => {
    jest.useFakeTimers();
    const slots = new InFlightSlots(1);
    await slots.acquire(async () => undefined);
    const rebalance = new Error('the group is rebalancing');
    const failing = slots.acquire(async () => {
      // The place frees while this heartbeat is in flight.
      slots.release();
      throw rebalance;
    });
    const failed = expect(failing).rejects.toBe(rebalance);
    await jest.advanceTimersByTimeAsync(1000);
    await failed;
    // The place returned: taken at once, with no release needed.
    let took = false;
    void slots.acquire(async () => undefined).then(() => (took = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(took).toBe(true);
  });
});
