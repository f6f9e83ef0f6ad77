import { KafkaUnavailableError, type FencingPublisher, type StateView } from '../../src/kafka/types';
import type { TaskRecord } from '../../src/tasks/task-snapshot';

interface Writer {
  publisher: FencingPublisher;
  /** the initialization of the transactional id after which the view was last synced */
  syncedGeneration: number;
  /** a write failed since that sync: it may have landed all the same, unseen by the view */
  unsure: boolean;
  /** settles and syncs under way (resolved): until they end, the view may lack what they settle */
  resolving: Set<Promise<unknown>>;
}

/** A partition's publisher, and the initialization after which the view shows every committed write. */
export interface CheckedWriter {
  publisher: FencingPublisher;
  /** pass to a final write: it then lands only if nobody initialized the id since the view was read */
  generation: number;
}

/**
 * One fencing publisher per task-requests partition, under a transactional id
 * named after the partition. Whoever owns the partition owns its tasks' writes:
 * a new owner's first use fences the previous owner (a zombie after a
 * rebalance or a pause), then syncs its view, so it starts from every final
 * event the previous owner managed to commit. The view is synced again after
 * any later initialization, for the same reason.
 */
export class PartitionWriters {
  private readonly writers = new Map<number, Writer>();

  constructor(
    private readonly create: (transactionalId: string) => FencingPublisher,
    private readonly transactionalIdPrefix: string,
    private readonly view: StateView<TaskRecord>,
    private readonly timeoutMs: number,
  ) {}

  async checked(partition: number): Promise<CheckedWriter> {
    const writer = this.writer(partition);
    // A resolve under way (another task's on this partition) cleared `unsure` as it began: a write that failed
    // before then may still be settling, and the view not show it. Answering before the resolve ends ran a task
    // whose final event was committed a moment later, to a second final event. A write that failed since marks
    // `unsure` again, for the check that follows the wait. (Resolving again itself, each check during a resolve would
    // start another: under steady load one failure became a settle and a sync before every task from then on. Only a
    // failure starts a resolve, so the wait ends once writes stop failing.)
    while (writer.resolving.size > 0) await Promise.allSettled(writer.resolving);
    // Released meanwhile (the partition went to another runner): a writer made now would fence its new owner.
    if (this.writers.get(partition) !== writer) throw new KafkaUnavailableError('the partition was handed back');
    if (writer.unsure) return this.resolved(partition);
    // The common case: nothing was initialized and no write failed since the last sync, so the view shows every
    // final event (each successful write of the runner's was applied to it before the write's caller went on).
    const current = writer.publisher.generation;
    if (current !== undefined && current === writer.syncedGeneration)
      return { publisher: writer.publisher, generation: current };
    const generation = await writer.publisher.settled();
    if (writer.syncedGeneration !== generation) {
      await this.view.syncedSince(Date.now(), this.timeoutMs);
      writer.syncedGeneration = generation;
    }
    return { publisher: writer.publisher, generation };
  }

  /**
   * After a failed or uncertain write: waits until the publisher's transactions
   * are over for good (committed or aborted), then syncs the view whatever the
   * generation, so the caller sees whether the uncertain write landed.
   */
  resolved(partition: number): Promise<CheckedWriter> {
    const writer = this.writer(partition);
    // Cleared first: a write failing while this runs marks it again, for the next check.
    writer.unsure = false;
    const resolving = this.resolve(writer);
    writer.resolving.add(resolving);
    const over = () => writer.resolving.delete(resolving);
    resolving.then(over, over);
    return resolving;
  }

  private async resolve(writer: Writer): Promise<CheckedWriter> {
    try {
      const generation = await writer.publisher.settled();
      await this.view.syncedSince(Date.now(), this.timeoutMs);
      writer.syncedGeneration = generation;
      return { publisher: writer.publisher, generation };
    } catch (err) {
      writer.unsure = true;
      throw err;
    }
  }

  /** A write through this partition's publisher failed: the next check settles and syncs before it answers. */
  markUnsure(partition: number): void {
    const writer = this.writers.get(partition);
    if (writer) writer.unsure = true;
  }

  private writer(partition: number): Writer {
    let writer = this.writers.get(partition);
    if (!writer) {
      const publisher = this.create(`${this.transactionalIdPrefix}${partition}`);
      writer = { publisher, syncedGeneration: -1, unsure: false, resolving: new Set() };
      this.writers.set(partition, writer);
    }
    return writer;
  }

  /** The partition went to another runner: its next owner fences this id; drop ours. */
  async release(partition: number): Promise<void> {
    const writer = this.writers.get(partition);
    this.writers.delete(partition);
    await writer?.publisher.close();
  }

  async closeAll(): Promise<void> {
    const all = [...this.writers.values()];
    this.writers.clear();
    await Promise.all(all.map((w) => w.publisher.close()));
  }
}
