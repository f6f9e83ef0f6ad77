import { Deadline } from './deadline';

/**
 * Runs steps one after another per key, in the order they were given, while steps of different keys run side by
 * side. A failed step does not stop the next one of its key. Keys are forgotten once their last step is done.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, step: () => Promise<T>): Promise<T> {
    const ran = (this.tails.get(key) ?? Promise.resolve()).then(step);
    const tail = ran.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return ran;
  }

  /**
   * Runs `step` after every step given before it on any of `keys`, and before any given after it on one of them.
   * Each call takes its place on all its keys at once, so a call waits only on earlier ones: no two can wait on
   * each other.
   */
  runOver<T>(keys: readonly string[], step: () => Promise<T>): Promise<T> {
    const own = [...new Set(keys)];
    const before = own.map((k) => this.tails.get(k)).filter((t) => t !== undefined);
    const ran = Promise.all(before).then(step);
    const tail = ran.catch(() => undefined);
    for (const k of own) this.tails.set(k, tail);
    void tail.then(() => {
      for (const k of own) if (this.tails.get(k) === tail) this.tails.delete(k);
    });
    return ran;
  }

  /** keys with a step under way or waiting */
  get busy(): number {
    return this.tails.size;
  }
}

/**
 * `runOver` under one deadline that starts at the call, not at the step's turn: a step that waited behind others
 * still ends within `timeoutMs` of its request, since each one before it ends within its own, which started earlier.
 * A step whose turn comes with less than a quarter of it left is not run (`tooLate`): a write given a few
 * milliseconds would fail, and a failed transaction reads as Kafka being down.
 */
export function inTurnWithin<T>(
  serial: KeyedSerial,
  keys: readonly string[],
  timeoutMs: number,
  tooLate: () => Error,
  step: (deadline: Deadline) => Promise<T>,
): Promise<T> {
  const deadline = new Deadline(timeoutMs);
  return serial.runOver(keys, () =>
    deadline.remaining() < timeoutMs / 4 ? Promise.reject(tooLate()) : step(deadline),
  );
}
