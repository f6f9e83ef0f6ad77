import { getMaxListeners } from 'node:events';
import { PartitionProgress } from '../../src/kafka/partition-progress';

/** A commit sender whose calls stay open until released, recording the offsets sent. */
function sender() {
  const sent: bigint[] = [];
  const open: { resolve(): void; reject(err: Error): void }[] = [];
  const send = (offset: bigint) => {
    sent.push(offset);
    return new Promise<void>((resolve, reject) => open.push({ resolve, reject }));
  };
  return { sent, open, send };
}

const started = (p: PartitionProgress, ...offsets: number[]) => {
  for (const o of offsets) p.start(BigInt(o));
};

describe('PartitionProgress', () => {
  test('commits only up to the oldest unfinished record', async () => {
    const p = new PartitionProgress(10n);
    started(p, 10, 11, 12);
    p.finish(11n);
    p.finish(12n);
    expect(p.low).toBe(10n);
    p.finish(10n);
    expect(p.low).toBe(13n);
    const { sent, open, send } = sender();
    const committing = p.commit(send, () => true);
    open[0].resolve();
    await committing;
    expect(sent).toEqual([13n]);
  });

  test('a record below the commit, running or finished is seen; a new one is not', () => {
    const p = new PartitionProgress(5n);
    started(p, 5, 6);
    p.finish(6n);
    expect([p.seen(5n), p.seen(6n), p.seen(7n)]).toEqual([true, true, false]);
  });

  test('one commit in flight at a time; the next carries everything finished meanwhile', async () => {
    const p = new PartitionProgress(0n);
    started(p, 0, 1, 2);
    const { sent, open, send } = sender();
    p.finish(0n);
    const first = p.commit(send, () => true);
    p.finish(1n);
    expect(p.commit(send, () => true)).toBeUndefined();
    p.finish(2n);
    expect(p.commit(send, () => true)).toBeUndefined();
    open[0].resolve();
    await new Promise((r) => setImmediate(r));
    open[1].resolve();
    await first;
    expect(sent).toEqual([1n, 3n]);
  });

  test('a failed commit is taken back, so the next one sends the same offset again', async () => {
    const p = new PartitionProgress(0n);
    started(p, 0);
    p.finish(0n);
    const { sent, open, send } = sender();
    const failing = p.commit(send, () => true);
    open[0].reject(new Error('coordinator moved'));
    await expect(failing).rejects.toThrow('coordinator moved');
    const again = p.commit(send, () => true);
    open[1].resolve();
    await again;
    expect(sent).toEqual([1n, 1n]);
  });

  test("no further commit once the partition is no longer this member's", async () => {
    const p = new PartitionProgress(0n);
    started(p, 0, 1);
    const { sent, open, send } = sender();
    let mine = true;
    p.finish(0n);
    const first = p.commit(send, () => mine);
    p.finish(1n);
    p.commit(send, () => mine);
    mine = false;
    open[0].resolve();
    await first;
    expect(sent).toEqual([1n]);
  });

  test('handing back aborts the signal every record was given, with the reason', () => {
    const p = new PartitionProgress(0n);
    started(p, 0, 1);
    const given = [p.signal, p.signal];
    p.finish(1n);
    expect(given.map((s) => s.aborted)).toEqual([false, false]);
    p.handBack(new Error('revoked'));
    expect(given.map((s) => s.aborted)).toEqual([true, true]);
    expect((given[0].reason as Error).message).toBe('revoked');
  });

  test('as many records in flight as a handler allows may listen to the signal, without a leak warning', () => {
    const p = new PartitionProgress(0n);
    const heard: number[] = [];
    for (let i = 0; i < 200; i += 1) {
      started(p, i);
      p.signal.addEventListener('abort', () => heard.push(i), { once: true });
    }
    // Node warns of a leak past an EventTarget's limit, 10 by default. (Jest's sandboxed `process` does not receive
    // the warning itself, so the test reads the limit.)
    expect(getMaxListeners(p.signal)).toBe(Infinity);
    p.handBack(new Error('shutdown'));
    expect(heard).toHaveLength(200);
  });
  test('a hold keeps the commit at its offset after the records there finished, until it moves or is released', async () => {
    const p = new PartitionProgress(0n);
    started(p, 0, 1, 2, 3);
    let changes = 0;
    const hold = p.hold(1n, () => (changes += 1));
    for (const o of [0n, 1n, 2n, 3n]) p.finish(o);
    const { sent, open, send } = sender();
    const commits: Promise<void>[] = [];
    const commitNow = async () => {
      const c = p.commit(send, () => true);
      if (c) commits.push(c);
      await new Promise((r) => setImmediate(r));
      open.splice(0).forEach((o) => o.resolve());
      await Promise.all(commits);
    };
    await commitNow();
    hold.moveTo(3n);
    await commitNow();
    hold.moveTo(2n); // a hold never goes down
    hold.release();
    await commitNow();
    expect(sent).toEqual([1n, 3n, 4n]);
    expect(changes).toBe(2);
  });

  test('records finished above a hold stay seen however long it lasts, and are forgotten as they are passed', () => {
    const p = new PartitionProgress(0n);
    p.hold(0n, () => undefined);
    for (let o = 0n; o < 1000n; o += 1n) {
      p.start(o);
      p.finish(o);
    }
    void p.commit(
      () => Promise.resolve(),
      () => true,
    );
    expect([p.seen(0n), p.seen(999n), p.seen(1000n)]).toEqual([true, true, false]);
    expect(p.commitPoint).toBe(0n);
    // What makes `seen` answer is the oldest unfinished offset, not a set of every finished one since the hold.
    expect((p as unknown as { done: Set<bigint> }).done.size).toBe(0);
  });
});
