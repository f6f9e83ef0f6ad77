import type { IncomingRecord } from '../../src/kafka/types';

/**
 * Admits the records of one partition one after another, in the order they arrive (offset order), while records of
 * different partitions are admitted side by side. A failed admission does not stop the next one.
 */
export class PartitionAdmission {
  private readonly tails = new Map<string, Promise<unknown>>();

  admit<T>(record: IncomingRecord, step: () => Promise<T>): Promise<T> {
    const key = `${record.topic}\u0000${record.partition}`;
    const admitted = (this.tails.get(key) ?? Promise.resolve()).then(step);
    const tail = admitted.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return admitted;
  }

  /** partitions with an admission under way (for tests: the map does not grow with the partitions ever seen) */
  get busy(): number {
    return this.tails.size;
  }
}
