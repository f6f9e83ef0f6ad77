import { AttemptRecorder } from '../../consumers/callback-bridge/attempt-recorder';
import type { OutgoingRecord, Publisher, WrittenRecord } from '../../src/kafka/types';

/** A publisher whose publishes stay open until settled by the test, recording what each carried. */
function heldPublisher() {
  const calls: { keys: string[]; resolve(): void; reject(err: Error): void }[] = [];
  const publisher: Publisher = {
    publish: (records: OutgoingRecord[]) =>
      new Promise<WrittenRecord[]>((resolve, reject) => {
        calls.push({ keys: records.map((r) => r.key), resolve: () => resolve([]), reject });
      }),
    publishStaged: () => Promise.reject(new Error('not used')),
  };
  return { publisher, calls };
}

const attempt = (key: string): OutgoingRecord => ({ topic: 'deliveries', key, value: '{}' });
const turn = () => new Promise((r) => setImmediate(r));

describe('AttemptRecorder', () => {
  test('a lone record goes at once; those made while it is written share the next publish', async () => {
    const { publisher, calls } = heldPublisher();
    const recorder = new AttemptRecorder(publisher, 0);
    const first = recorder.record(attempt('a'));
    expect(calls.map((c) => c.keys)).toEqual([['a']]);
    const rest = ['b', 'c', 'd'].map((k) => recorder.record(attempt(k)));
    expect(calls).toHaveLength(1);
    calls[0].resolve();
    await first;
    await turn();
    expect(calls.map((c) => c.keys)).toEqual([['a'], ['b', 'c', 'd']]);
    calls[1].resolve();
    await Promise.all(rest);
  });

  test('a record resolves only once the publish that carried it is done', async () => {
    const { publisher, calls } = heldPublisher();
    const recorder = new AttemptRecorder(publisher, 0);
    let done = false;
    const recorded = recorder.record(attempt('a')).then(() => (done = true));
    await turn();
    expect(done).toBe(false);
    calls[0].resolve();
    await recorded;
    expect(done).toBe(true);
  });

  test('a failed publish rejects every record it carried; a record made again goes in a new publish', async () => {
    const { publisher, calls } = heldPublisher();
    const recorder = new AttemptRecorder(publisher, 0);
    const first = recorder.record(attempt('a'));
    const held = [recorder.record(attempt('b')), recorder.record(attempt('c'))];
    calls[0].resolve();
    await first;
    await turn();
    calls[1].reject(new Error('Kafka did not acknowledge'));
    for (const r of held) await expect(r).rejects.toThrow('Kafka did not acknowledge');
    const again = recorder.record(attempt('b'));
    calls[2].resolve();
    await again;
    expect(calls.map((c) => c.keys)).toEqual([['a'], ['b', 'c'], ['b']]);
  });

  describe('with a linger', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    test('a publish begins no sooner than the linger after the one before began', async () => {
      const { publisher, calls } = heldPublisher();
      const recorder = new AttemptRecorder(publisher, 50);
      const first = recorder.record(attempt('a'));
      calls[0].resolve();
      await first;
      const second = recorder.record(attempt('b'));
      jest.advanceTimersByTime(49);
      expect(calls).toHaveLength(1);
      jest.advanceTimersByTime(1);
      expect(calls.map((c) => c.keys)).toEqual([['a'], ['b']]);
      calls[1].resolve();
      await second;
    });

    test('a full batch does not wait for the linger', async () => {
      const { publisher, calls } = heldPublisher();
      const recorder = new AttemptRecorder(publisher, 50, 3);
      const first = recorder.record(attempt('a'));
      calls[0].resolve();
      await first;
      const batch = ['b', 'c', 'd', 'e'].map((k) => recorder.record(attempt(k)));
      expect(calls.map((c) => c.keys)).toEqual([['a'], ['b', 'c', 'd']]);
      calls[1].resolve();
      await Promise.all(batch.slice(0, 3));
      jest.advanceTimersByTime(50);
      expect(calls.map((c) => c.keys)).toEqual([['a'], ['b', 'c', 'd'], ['e']]);
      calls[2].resolve();
      await batch[3];
    });
  });
});
