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

  /** keys with a step under way or waiting */
  get busy(): number {
    return this.tails.size;
  }
}
