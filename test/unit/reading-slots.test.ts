import { ReadingSlots, type SlotWaiter } from '../../consumers/callback-bridge/reading-slots';

/** A backlog as the slots see it: it takes a slot when resumed, and gives it back when asked to yield. */
function backlog(slots: ReadingSlots, log: string[], name: string) {
  const b: SlotWaiter & { reading: boolean } = {
    reading: false,
    resume: () => {
      if (!b.reading && slots.take(b)) {
        b.reading = true;
        log.push(`${name} reads`);
      }
    },
    yieldSlot: () => {
      if (!b.reading) return false;
      b.reading = false;
      log.push(`${name} yields`);
      slots.busy(b);
      slots.give();
      return true;
    },
  };
  return b;
}

describe('ReadingSlots (lane backlogs take turns at reading from Kafka)', () => {
  test('no more readings than slots; waiters are served in the order they came', () => {
    const slots = new ReadingSlots(2);
    const log: string[] = [];
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => backlog(slots, log, n));
    for (const x of [a, b, c, d]) x.resume();
    expect(log).toEqual(['a reads', 'b reads']);
    a.reading = false;
    slots.give();
    b.reading = false;
    slots.give();
    expect(log).toEqual(['a reads', 'b reads', 'c reads', 'd reads']);
  });

  test('a waiter that cannot read when resumed leaves the slot to the next', () => {
    const slots = new ReadingSlots(1);
    const log: string[] = [];
    const a = backlog(slots, log, 'a');
    const gone: SlotWaiter = { resume: () => log.push('gone declines'), yieldSlot: () => false };
    const c = backlog(slots, log, 'c');
    a.resume();
    slots.take(gone);
    c.resume();
    a.reading = false;
    slots.give();
    expect(log).toEqual(['a reads', 'gone declines', 'c reads']);
  });

  test('a holder that only waits for room gives its slot up once another backlog waits for one', async () => {
    const slots = new ReadingSlots(1);
    const log: string[] = [];
    const a = backlog(slots, log, 'a');
    const b = backlog(slots, log, 'b');
    a.resume();
    slots.idle(a);
    await Promise.resolve();
    expect(log).toEqual(['a reads']);
    b.resume();
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['a reads', 'a yields', 'b reads']);
  });

  test('an idle holder keeps its slot while nobody waits, and one that left is never resumed', async () => {
    const slots = new ReadingSlots(1);
    const log: string[] = [];
    const a = backlog(slots, log, 'a');
    const b = backlog(slots, log, 'b');
    a.resume();
    slots.idle(a);
    slots.busy(a);
    b.resume();
    slots.leave(b);
    await new Promise((r) => setImmediate(r));
    a.reading = false;
    slots.give();
    expect(log).toEqual(['a reads']);
  });
  test('an idle holder that is reading again by the time it is asked keeps its slot; the next idler is asked', async () => {
    const slots = new ReadingSlots(2);
    const log: string[] = [];
    const [a, b, c] = ['a', 'b', 'c'].map((n) => backlog(slots, log, n));
    a.resume();
    b.resume();
    slots.idle(a);
    slots.idle(b);
    // a was woken (room came) before the request to yield ran: it reads, and declines.
    a.reading = false;
    a.yieldSlot = () => false;
    c.resume();
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['a reads', 'b reads', 'b yields', 'c reads']);
  });
});
