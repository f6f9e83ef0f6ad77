/** What waits for a reading slot: told to try again when one is free; asked to give its slot up when only idle. */
export interface SlotWaiter {
  resume(): void;
  /** gives the slot up if it only waits for room; false if it is reading after all (it keeps its slot) */
  yieldSlot(): boolean;
}

/**
 * How many lane backlogs read from Kafka at once in one bridge. Each reading is a Kafka consumer of its own, with
 * its connections and fetches; when many lanes fill at the same moment (every task's callbacks aimed at one dead
 * endpoint, dead-lettered in turn), their backlogs take turns instead of opening hundreds of consumers at once.
 * Waiters are served in the order they came.
 */
export class ReadingSlots {
  private free: number;
  /** a Set keeps insertion order: first come, first served */
  private readonly waiting = new Set<SlotWaiter>();
  /** holders whose reading only waits for room in its lane */
  private readonly idlers = new Set<SlotWaiter>();

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Takes a slot, or queues the waiter to be resumed when one is free (then it calls take again). */
  take(waiter: SlotWaiter): boolean {
    if (this.free > 0) {
      this.free -= 1;
      this.waiting.delete(waiter);
      return true;
    }
    this.waiting.add(waiter);
    this.askIdlerToYield();
    return false;
  }

  /** The holder's reading waits for room in its lane: it gives its slot up if another backlog waits for one. */
  idle(holder: SlotWaiter): void {
    this.idlers.add(holder);
    this.askIdlerToYield();
  }

  /** The holder reads again (or stopped). */
  busy(holder: SlotWaiter): void {
    this.idlers.delete(holder);
  }

  /** After this turn: a yield gives the slot back, which resumes a waiter, which takes it; not inside take(). */
  private askIdlerToYield(): void {
    if (this.waiting.size === 0 || this.idlers.size === 0) return;
    const [idler] = this.idlers;
    this.idlers.delete(idler);
    queueMicrotask(() => {
      if (!idler.yieldSlot()) this.askIdlerToYield();
    });
  }

  /** Gives a slot back: waiters are resumed in turn until one takes it (one that cannot read now leaves it). */
  give(): void {
    this.free += 1;
    for (const waiter of this.waiting) {
      if (this.free === 0) return;
      this.waiting.delete(waiter);
      waiter.resume();
    }
  }

  /** The waiter no longer wants a slot (it ended). */
  leave(waiter: SlotWaiter): void {
    this.waiting.delete(waiter);
    this.idlers.delete(waiter);
  }
}
